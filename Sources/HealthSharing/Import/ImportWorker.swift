import Data4HelpCore
import DatabaseLink
import DeviceFiles
import Foundation
import Logging
import NIOCore
import ServiceLifecycle
import Tracing
import UntrustedXML

/// Reads queued imports in the background, on every instance: claims one (a lease, `FOR UPDATE
/// SKIP LOCKED`), reads its file from PostgreSQL chunk by chunk, and stores its records in
/// batches. Each batch commits with the import's checkpoint and figures, so a worker that dies
/// leaves a position another one continues from once the lease has run out — nothing lost,
/// nothing stored or counted twice (records' ids come from their identity besides).
///
/// An `export.xml` is read as it arrives: once `followAhead` bytes of it are in beyond where its
/// reading stands, a worker claims it while it is still uploading and follows the upload's
/// committed chunks, so that the reading ends soon after the upload does instead of starting
/// then. A worker that catches up with an upload that has paused commits and gives the claim
/// back (`followIdle`): it never waits on one phone's network while other imports queue.
package struct ImportWorker: Service {
    let store: ImportStore
    let workouts: WorkoutStore
    let dataManager: DataManager
    let queued: ChangeSignal
    let schemaReady: StartupGate
    let logger: Logger
    package var settings: ImportSettings

    package init(
        database: Database, dataManager: DataManager, queued: ChangeSignal, schemaReady: StartupGate, settings: ImportSettings = ImportSettings(),
        logger: Logger
    ) {
        self.store = ImportStore(database: database)
        self.workouts = WorkoutStore(database: database)
        self.dataManager = dataManager
        self.queued = queued
        self.schemaReady = schemaReady
        self.settings = settings
        self.logger = logger
    }

    package func run() async throws {
        await schemaReady.wait()
        await cancelWhenGracefulShutdown {
            await queued.repeatWhileBusy(pollInterval: settings.pollInterval) { await runOne() }
        }
    }

    /// Claims and reads one import; false if none was waiting.
    @discardableResult
    package func runOne() async -> Bool {
        let claim: ClaimedImport
        do {
            guard let claimed = try await store.claim(leaseFor: settings.lease, followAhead: settings.followAhead) else { return false }
            claim = claimed
        } catch {
            logger.warning("cannot claim an import; will retry", metadata: ["error.type": "\(type(of: error))"])
            return false
        }
        do {
            // A file that ends the process that reads it (a bug) must not end every instance in turn.
            guard claim.tries <= settings.maximumAttempts else {
                throw ImportFailure("the file could not be read: the import was started \(settings.maximumAttempts) times and stopped each time")
            }
            // Reading runs on a thread of lower priority than the requests of everyone else.
            try await withSpan("import") { span in
                span.attributes["data4help.import.id"] = claim.publicId.uuidString.lowercased()
                span.attributes["data4help.attempt"] = claim.attempt
                try await withTaskExecutorPreference(BackgroundExecutor.imports) { try await read(claim) }
            }
        } catch is ImportClaimLost {
            logger.info("import stopped: cancelled or taken over", metadata: ["import.id": "\(claim.publicId)"])
        } catch let failure as ImportFailure {
            try? await store.fail(claim, reason: failure.reason, announcing: ImportAnnouncer.events)
        } catch is CancellationError {
            // Shutting down: the lease runs out and another worker continues from the checkpoint.
        } catch {
            // A database error: leave the claim; its lease runs out and the import is tried again.
            logger.warning("import interrupted; will be continued", metadata: ["import.id": "\(claim.publicId)", "error.type": "\(type(of: error))"])
        }
        return true
    }

    // MARK: - Reading

    /// Reads `claim`'s file from its checkpoint to the end.
    func read(_ claim: ClaimedImport) async throws {
        let checkpoint = try claim.checkpoint.map { try JSONDecoder().decode(ImportCheckpoint.self, from: Data($0.utf8)) }
        let offset = checkpoint?.offset ?? 0
        switch claim.format {
        case .appleHealthXML:
            var batch = ImportBatch(claim: claim)
            let chunks = StoredChunks(store: store, claim: claim, offset: offset, settings: settings)
            guard let processed = try await readExport(&batch, name: "export.xml", from: checkpoint?.position, pieces: chunks) else {
                return  // caught up with an upload that paused: given back until more of it arrives
            }
            try await store.finish(claim, progress: batch.progress(processed: processed), announcing: ImportAnnouncer.events)
        case .appleHealthZIP:
            // A ZIP is read from its end (the directory): spooled to a temporary file first.
            let file = try await spool(claim)
            defer { try? FileManager.default.removeItem(at: file) }
            var batch = ImportBatch(claim: claim)
            do {
                let export = try ZipEntryStream.export(at: file)
                var processed = offset
                if checkpoint?.routesRead == nil {
                    let pieces = SkippedPieces(pieces: export.pieces(pieceBytes: settings.pieceBytes), skip: offset)
                    // A ZIP is only claimed once it has arrived whole: its reading never pauses.
                    processed =
                        try await readExport(&batch, name: export.name, from: checkpoint?.position, pieces: pieces, routesFollow: true) ?? offset
                }
                try await readRoutes(&batch, of: export, from: checkpoint?.routesRead ?? 0, processed: processed)
                try await store.finish(claim, progress: batch.progress(processed: processed), announcing: ImportAnnouncer.events)
            } catch let unreadable as ZipEntryStream.Unreadable {
                throw ImportFailure(unreadable.reason)
            }
        case .gpx:
            try await readActivity(claim, format: .gpx, stored: checkpoint?.complete == true)
        case .tcx:
            try await readActivity(claim, format: .tcx, stored: checkpoint?.complete == true)
        case .fit:
            try await readActivity(claim, format: .fit, stored: checkpoint?.complete == true)
        }
    }

    /// Reads the workout routes of an `export.zip` (`workout-routes/*.gpx`, one per outdoor
    /// workout) from the `first`-th on, in path order: every point a location fix. Each file's
    /// points commit with the count of files read, so a worker taking over starts at the next.
    private func readRoutes(_ batch: inout ImportBatch, of export: ZipEntryStream.Export, from first: Int, processed: Int64) async throws {
        let routes = export.routes
        guard first < routes.count else { return }
        // The export is read: its position no longer matters, only the routes read.
        var checkpoint = ImportCheckpoint(XMLReader.Position(offset: processed, line: 0, open: []))
        for index in first..<routes.count {
            let route = routes[index]
            do {
                let document = try GPXReader.read(try export.bytes(of: route, limit: ActivityImport.maximumBytes))
                for item in ActivityImport.items(document) { batch.add(item) }
            } catch let error as ActivityFileError {
                batch.add(.unreadable(type: "workout route \(route.name)", reason: "a workout route \(error.reason)"))
            }
            checkpoint.routesRead = index + 1
            if batch.isFull(settings, othersUploading: dataManager.liveUploadsArriving) || index == routes.count - 1 {
                try await commit(&batch, checkpoint: checkpoint, processed: processed)
            }
        }
    }

    /// Reads an activity file (GPX, TCX, FIT) whole, stores it in one transaction and marks it read
    /// there (a checkpoint at its end, `complete`), so a worker taking over after a crash only
    /// finishes the import (`stored`).
    private func readActivity(_ claim: ClaimedImport, format: ActivityFileFormat, stored: Bool) async throws {
        var batch = ImportBatch(claim: claim)
        if !stored {
            guard claim.bytesReceived <= ActivityImport.maximumBytes else {
                throw ImportFailure(
                    "the \(format.rawValue) file is larger than the \(ActivityImport.maximumBytes >> 20) MiB an activity import may be")
            }
            var bytes: [UInt8] = []
            for try await piece in StoredChunks(store: store, claim: claim, offset: 0, settings: settings) { bytes += piece }
            let document: ActivityDocument
            do {
                document = try format.read(bytes)
            } catch {
                throw ImportFailure("the \(format.rawValue) file \(error.reason)")
            }
            guard ActivityImport.hasRecordedPoints(document) else {
                throw ImportFailure(
                    "the \(format.rawValue) file has no track points (\(document.routes.joined().count) route points, \(document.waypoints) waypoints)"
                )
            }
            for item in ActivityImport.items(document) { batch.add(item) }
            try await commit(&batch, checkpoint: .complete(bytes: claim.bytesReceived), processed: claim.bytesReceived)
        }
        try await store.finish(claim, progress: batch.progress(processed: claim.bytesReceived), announcing: ImportAnnouncer.events)
    }

    /// Copies the import's file from the database to a temporary file of this instance.
    private func spool(_ claim: ClaimedImport) async throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("data4help-import-\(claim.publicId.uuidString).zip")
        FileManager.default.createFile(atPath: url.path, contents: nil, attributes: [.posixPermissions: 0o600])
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        for try await piece in StoredChunks(store: store, claim: claim, offset: 0, settings: settings) { try handle.write(contentsOf: piece) }
        return url
    }

    /// Reads an Apple Health export from `checkpoint` (or its start) to its end, committing as
    /// it goes: `pieces` are its bytes from there on. Answers the bytes of it read, or nil if
    /// the reading caught up with an upload that paused and the claim was given back (what was
    /// read is committed). With `routesFollow`, the last commit says the ZIP's workout routes
    /// are next.
    private func readExport(
        _ batch: inout ImportBatch, name: String, from checkpoint: XMLReader.Position?, pieces: some AsyncSequence<[UInt8], any Error>,
        routesFollow: Bool = false
    ) async throws -> Int64? {
        var reader = try checkpoint.map { try AppleHealthExportReader(resumingAt: $0) } ?? AppleHealthExportReader()
        var offset = checkpoint?.offset ?? 0
        var iterator = pieces.makeAsyncIterator()
        do {
            while true {
                let piece: [UInt8]
                do {
                    guard let next = try await iterator.next() else { break }
                    piece = next
                } catch is UploadPaused {
                    // Everything that arrived is read: commit up to the last whole record, and give
                    // the claim back unless the upload ended meanwhile (then read on).
                    let position = reader.checkpoint
                    try await commit(&batch, checkpoint: position.map(ImportCheckpoint.init), processed: position?.offset ?? 0)
                    if try await store.release(batch.claim) { return nil }
                    continue
                }
                var start = piece.startIndex
                while start < piece.endIndex {
                    // A full batch is cut where an hour's samples end (see `cutFeedBytes`): read a
                    // record at a time until one starts another hour, and cut just before it.
                    let othersUploading = dataManager.liveUploadsArriving
                    let cutting = batch.isFull(settings, othersUploading: othersUploading)
                    let end = min(piece.endIndex, start + (cutting ? settings.cutFeedBytes : settings.feedBytes))
                    let before = (checkpoint: reader.checkpoint, samples: batch.samples.count, records: batch.records)
                    try reader.feed(piece[start..<end]) { batch.add($0) }
                    offset += Int64(end - start)
                    start = end
                    guard cutting else {
                        // Let other work of the reading thread in (a commit's, another import's).
                        await Task.yield()
                        continue
                    }
                    let oneSampleRead = batch.samples.count == before.samples + 1 && batch.records == before.records + 1
                    if oneSampleRead, batch.lastSampleStartsABlock, let checkpoint = before.checkpoint {
                        // The sample is read again from the checkpoint after a crash: not counted yet.
                        let next = batch.holdBackLastSample()
                        try await commit(&batch, checkpoint: ImportCheckpoint(checkpoint), processed: checkpoint.offset, wait: false)
                        batch.add(.sample(next))
                    } else if batch.isOverfull(settings, othersUploading: othersUploading), let checkpoint = reader.checkpoint {
                        // No hour ends near (1 Hz data): cut here, the next batch merges the hour.
                        try await commit(&batch, checkpoint: ImportCheckpoint(checkpoint), processed: checkpoint.offset, wait: false)
                    }
                }
            }
            try reader.finish { batch.add($0) }
        } catch let error as XMLReadError {
            try await commit(&batch, checkpoint: reader.checkpoint.map(ImportCheckpoint.init), processed: offset)
            throw ImportFailure(
                error.reason.contains("ends inside") || error.reason.contains("is not closed")
                    ? "\(name) is cut off at line \(error.line.formatted(.number))"
                    : "\(name) cannot be read at line \(error.line.formatted(.number)): \(error.reason)")
        } catch let error as UntrustedXMLError {
            try await commit(&batch, checkpoint: reader.checkpoint.map(ImportCheckpoint.init), processed: offset)
            throw ImportFailure("\(name) \(error.reason)")
        } catch let error as ZipEntryStream.Unreadable {
            // What was read before the damage is stored and counted, as for a cut-off file.
            try await commit(&batch, checkpoint: reader.checkpoint.map(ImportCheckpoint.init), processed: offset)
            throw ImportFailure(error.reason)
        } catch {
            await batch.abandon()
            throw error
        }
        var end = reader.checkpoint.map(ImportCheckpoint.init)
        if routesFollow { end?.routesRead = 0 }
        try await commit(&batch, checkpoint: end, processed: offset)
        return offset
    }

    /// Stores the batch's items with its figures and `checkpoint`, in one transaction: after the
    /// commit in flight, and — unless `wait` — while the caller reads on.
    private func commit(_ batch: inout ImportBatch, checkpoint: ImportCheckpoint?, processed: Int64, wait: Bool = true) async throws {
        try await batch.settle()
        let claim = batch.claim, lease = settings.lease
        let checkpointText = try checkpoint.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }
        batch.begin { [dataManager, workouts, store] handover in
            // A span per chunk, a child of the import's (the commit's task inherits the context).
            try await withSpan("import chunk") { span in
                span.attributes["data4help.import.records"] = handover.samples.count
                span.attributes["data4help.import.bytes_processed"] = processed
                return try await dataManager.ingestHistory(handover.samples, for: IndividualID(rowId: claim.individualId)) { stored, transaction in
                    var counted = handover.figures
                    counted.add(stored, items: handover.samples)
                    let (newWorkouts, workoutSpan) = try await workouts.insert(handover.workouts, importId: claim.id, in: transaction)
                    if !handover.workouts.isEmpty {
                        counted.types[DataKind.workoutName, default: ImportFigures.TypeCounts()].accepted += newWorkouts
                        counted.types[DataKind.workoutName, default: ImportFigures.TypeCounts()].duplicates += handover.workouts.count - newWorkouts
                    }
                    if let workoutSpan { counted.addSpan(workoutSpan, to: DataKind.workoutName) }
                    let progress = ImportProgress(
                        checkpoint: checkpointText, figures: String(decoding: try JSONEncoder().encode(counted), as: UTF8.self),
                        bytesProcessed: processed, records: handover.records
                    )
                    try await store.recordProgress(progress, of: claim, leaseFor: lease, in: transaction)
                    return counted
                }
            }
        }
        if wait { try await batch.settle() }
    }
}

/// The import's file as stored, from `offset` on, a chunk at a time. For a claim of an upload
/// still arriving, it follows the upload: at the end of what has arrived it looks for more
/// (renewing the claim's lease) every `followPoll`, ends when the upload has, and throws
/// `UploadPaused` after `followIdle` without a new byte (it may be asked for more afterwards).
struct StoredChunks: AsyncSequence {
    let store: ImportStore
    let claim: ClaimedImport
    let offset: Int64
    let settings: ImportSettings

    struct AsyncIterator: AsyncIteratorProtocol {
        let store: ImportStore
        let claim: ClaimedImport
        let settings: ImportSettings
        var offset: Int64
        var received: Int64
        var uploading: Bool

        mutating func next() async throws -> [UInt8]? {
            var waitingSince: ContinuousClock.Instant?
            while offset >= received {
                guard uploading else { return nil }
                if let since = waitingSince {
                    guard ContinuousClock.now - since < settings.followIdle else { throw UploadPaused() }
                    try await Task.sleep(for: settings.followPoll)
                } else {
                    waitingSince = .now
                }
                (received, uploading) = try await store.follow(claim, leaseFor: settings.lease)
            }
            guard let chunk = try await store.chunk(of: claim.id, holding: offset) else {
                throw ImportFailure("the uploaded file is missing its bytes from \(offset)")
            }
            let bytes = Array(chunk.bytes.readableBytesView.dropFirst(Int(offset - chunk.position)))
            offset += Int64(bytes.count)
            return bytes
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(store: store, claim: claim, settings: settings, offset: offset, received: claim.bytesReceived, uploading: claim.uploading)
    }
}

/// The reading of an upload caught up with it, and nothing more arrived for `followIdle`.
struct UploadPaused: Error {}

/// Inflated pieces of a ZIP entry, without its first `skip` bytes (read before a checkpoint).
struct SkippedPieces<Pieces: AsyncSequence<Data, any Error>>: AsyncSequence {
    let pieces: Pieces
    let skip: Int64

    struct AsyncIterator: AsyncIteratorProtocol {
        var inner: Pieces.AsyncIterator
        var skip: Int64

        mutating func next() async throws -> [UInt8]? {
            while let piece = try await inner.next() {
                if skip >= Int64(piece.count) {
                    skip -= Int64(piece.count)
                    continue
                }
                let rest = Array(piece.dropFirst(Int(skip)))
                skip = 0
                return rest
            }
            return nil
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(inner: pieces.makeAsyncIterator(), skip: skip) }
}

/// How imports are read.
package struct ImportSettings: Sendable {
    /// How long a claim lasts without a commit before another worker may take the import over.
    package var lease: Duration = .seconds(60)
    package var pollInterval: Duration = .seconds(5)
    /// Bytes a ZIP entry is inflated in at once.
    package var pieceBytes = 256 * 1024
    /// Bytes fed to a reader at once: between two chances to commit, and for other work to run
    /// (64 KiB of an export is about 250 records, 1 ms of reading).
    package var feedBytes = 64 * 1024
    /// Records in one committed batch…
    package var batchRecords = 5_000
    /// …and while others' uploads arrive at this instance (`DataManager.liveUploadsArriving`):
    /// an upload that arrives while a batch's statement runs waits for it (the statement's CPU
    /// and its WAL, ahead of the upload's commit in the same flush), so a shorter statement is a
    /// shorter wait.
    package var batchRecordsWhileOthersUpload = 1_000
    /// A full batch is cut where an hour's samples end, found by reading this many bytes at a
    /// time (less than a record: one ends per read at most). A batch cut inside an hour left that
    /// hour's block to be merged by the next batch through the general ingest statement, about
    /// 6 ms of PostgreSQL's time a batch (its log: 1,478 such statements in one import).
    package var cutFeedBytes = 64
    /// …at most this many samples past the batch's size (1 Hz data fills an hour with 3,600).
    package var cutSearchRecords = 500
    /// Claims of one import before it fails (each after a worker died or lost its lease).
    package var maximumAttempts = 5
    /// An `export.xml` still uploading is claimed and read as it arrives once this much of it
    /// is in beyond where its reading stands (8 MiB: about 30,000 records, a few batches).
    package var followAhead: Int64 = 8 << 20
    /// A worker following an upload looks for more this often when it has read everything…
    package var followPoll: Duration = .milliseconds(50)
    /// …and gives the claim back when nothing more arrived for this long.
    package var followIdle: Duration = .seconds(2)

    package init() {}

    /// Records in one committed batch, as others' uploads arrive or not.
    func batchSize(othersUploading: Bool) -> Int { othersUploading ? batchRecordsWhileOthersUpload : batchRecords }
}

/// Why an import failed, in words for its owner.
struct ImportFailure: Error {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}

/// The records read since the last commit began, the figures committed so far, and the commit
/// in flight: a batch is stored while the next one is read (at most one commit at a time, in
/// order), so reading and storing use both cores.
struct ImportBatch {
    let claim: ClaimedImport
    var samples: [RawIngestItem] = []
    var workouts: [NewWorkout] = []
    /// The figures of the commits that finished: what the database holds.
    private var committed: ImportFigures
    /// What was counted outside storage since the last commit began (types skipped, records
    /// unreadable, workouts read).
    private var counted = ImportFigures()
    /// Records read, committed ones included.
    var records: Int64
    /// The commit in flight, answering the figures it committed.
    private var inFlight: Task<ImportFigures, any Error>?

    init(claim: ClaimedImport) {
        self.claim = claim
        committed = (try? JSONDecoder().decode(ImportFigures.self, from: Data(claim.figures.utf8))) ?? ImportFigures()
        records = claim.records
    }

    mutating func add(_ item: ImportedItem) {
        records += 1
        switch item {
        case .sample(let raw): samples.append(raw)
        case .skipped(let type): counted.skipped[type, default: 0] += 1
        case .unreadable(let type, let reason): counted.reject(reason, example: type)
        case .workout(let workout):
            counted.workouts += 1
            if let stored = workout.stored {
                workouts.append(stored)
            } else {
                counted.reject("a workout has no start, or no end or duration", example: "workout \(workout.activity)")
            }
        }
    }

    func isFull(_ settings: ImportSettings, othersUploading: Bool) -> Bool {
        samples.count >= settings.batchSize(othersUploading: othersUploading)
    }

    /// Full, and no hour ended within `cutSearchRecords` samples after: cut wherever it stands.
    func isOverfull(_ settings: ImportSettings, othersUploading: Bool) -> Bool {
        samples.count >= settings.batchSize(othersUploading: othersUploading) + settings.cutSearchRecords
    }

    /// Whether the last sample read begins a block of its own: it is of another type than the
    /// sample before it, or starts in another hour (UTC, as hour blocks are cut). A batch cut just
    /// before it leaves the next batch no hour to merge with this one's.
    var lastSampleStartsABlock: Bool {
        guard samples.count >= 2 else { return false }
        let last = samples[samples.count - 1], previous = samples[samples.count - 2]
        guard last.type == previous.type else { return true }
        guard let lastStart = last.start?.date, let previousStart = previous.start?.date else {
            return false
        }
        return (lastStart.timeIntervalSince1970 / 3_600).rounded(.down) != (previousStart.timeIntervalSince1970 / 3_600).rounded(.down)
    }

    /// Takes the last sample read out of the batch and out of its count of records read: it
    /// lies after the checkpoint the batch is about to commit with.
    mutating func holdBackLastSample() -> RawIngestItem {
        records -= 1
        return samples.removeLast()
    }

    /// Waits for the commit in flight, if any; its figures become the committed ones.
    mutating func settle() async throws {
        guard let task = inFlight else { return }
        inFlight = nil
        committed = try await task.value
    }

    /// Waits for the commit in flight whatever its outcome: reading stopped for another reason.
    mutating func abandon() async {
        _ = try? await settle()
    }

    /// Hands what was read since the last commit to `store`, run while the next batch is read:
    /// the figures it starts from are the committed ones plus those counted since. Settle first.
    mutating func begin(_ store: @escaping @Sendable (Handover) async throws -> ImportFigures) {
        precondition(inFlight == nil, "one commit at a time")
        let handover = Handover(samples: samples, workouts: workouts, figures: figures, records: records)
        inFlight = Task { try await store(handover) }
        counted = ImportFigures()
        samples.removeAll(keepingCapacity: true)
        workouts.removeAll()
    }

    /// One commit's share: its records and the figures before them.
    struct Handover: Sendable {
        let samples: [RawIngestItem]
        let workouts: [NewWorkout]
        let figures: ImportFigures
        let records: Int64
    }

    /// The committed figures and those counted since the last commit began.
    private var figures: ImportFigures {
        var all = committed
        all.merge(counted)
        return all
    }

    /// The import's progress when it ends (every commit settled).
    func progress(processed: Int64) -> ImportProgress {
        ImportProgress(
            checkpoint: nil, figures: String(decoding: (try? JSONEncoder().encode(figures)) ?? Data("{}".utf8), as: UTF8.self),
            bytesProcessed: processed, records: records
        )
    }
}
