import ArgumentParser
import AsyncHTTPClient
import Data4HelpCore
import DatabaseLink
import Foundation
import HTTPAPI
import HealthSharing
import NIOCore
import NIOHTTP1
import Synchronization

/// `data4help bench import`: an Apple Health export of a heavy Watch user's year (heart rate,
/// active and basal energy, steps, distance, sleep, oxygen, respiratory rate, workouts with their
/// statistics and routes), written to disk and uploaded as a stream, then read by the server's
/// import worker while other individuals keep uploading. Prints records/s end to end, the
/// server's resident memory above idle during the import, bytes stored per record, and the other
/// individuals' upload latency with and without the import running (same run): the others upload
/// throughout, and `rounds` windows without an import alternate with imports (each by a new
/// individual), so that the p99 on each side pools several windows rather than one — a single
/// 15-second baseline's p99 varied from 17 to 106 ms between runs on the same machine.
struct ImportBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "import", abstract: "Importing an Apple Health export of a heavy user's year.")

    @Option(help: "Records in the export.") var records = 2_000_000
    @Option(help: "Workouts in the export (each with statistics and a route).") var workouts = 150
    @Option(help: "Other individuals uploading meanwhile, each with one upload of 100 samples at a time.") var uploaders = 4
    @Option(help: "Seconds of the other individuals' uploads without an import (the baseline) before each round's import.") var baselineSeconds = 15
    @Option(help: "Rounds of a baseline then an import (each by a new individual), the others uploading throughout.") var rounds = 3
    @Option(
        help: """
            Uploads a second each other individual starts on a fixed schedule, each timed from when it was due (an open \
            loop, as phones upload: a stall shows in the latency instead of slowing the load); 0: each uploads again as \
            soon as it is answered (a closed loop that takes whatever the machine has left).
            """)
    var othersRate = 10.0
    @Flag(
        inversion: .prefixedNo,
        help: "Whether the worker reads the export while it arrives (--no-follow: only once it has arrived, the baseline).")
    var follow = true

    func validate() throws {
        guard othersRate == 0 || (0.1...1_000).contains(othersRate) else {
            throw ValidationError("--others-rate is 0 (a closed loop) or 0.1 to 1000 uploads a second")
        }
        guard (1...100).contains(rounds) else { throw ValidationError("--rounds is 1 to 100") }
    }

    func run() async throws {
        let file = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("data4help-bench-export-\(getpid()).xml")
        defer { try? FileManager.default.removeItem(at: file) }
        let generated = ContinuousClock.now
        let written = try ExportWriter(records: records, workouts: workouts).write(to: file)
        let size = (try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber)?.int64Value ?? 0
        print(
            "data4help bench import — \(written.records) records (\(written.stored) of stored types), \(workouts) workouts, "
                + String(
                    format: "%.0f MB, written in %.0f s; %d individuals uploading meanwhile, ", Double(size) / 1e6,
                    (ContinuousClock.now - generated).inSeconds, uploaders)
                + (othersRate > 0 ? String(format: "each %g uploads of 100 a second on a schedule", othersRate) : "each as soon as answered")
                + "; \(rounds) rounds of \(baselineSeconds) s without an import, then one import by a new individual")

        let parsing = try readAlone(file)
        print(
            String(
                format: "reading and checking the export alone, one thread (no database): %.0f records/s (%.2f µs per record)", parsing, 1e6 / parsing
            ))
        BenchSummary.record("import", "reading and checking alone, one thread (records/s)", format: "%.0f", parsing)

        // In a closed loop the others upload as fast as they are answered: the per-credential rate
        // limit (1,200 a minute) would answer them 429 long before the machine is busy.
        try await BenchServer.run(configure: {
            $0.rateLimitRequests = 1_000_000
            if !follow { $0.importSettings.followAhead = .max }
        }) { server in
            // Everyone registers first (a password hash each), then the others upload without a
            // pause until the end: the windows without and with an import alternate under one load.
            let others = try await BenchServer.concurrently(uploaders, uploaders) { try await server.individualSession(1 + $0) }
            let people = try await BenchServer.concurrently(rounds, 1) { try await server.individualSession(1 + uploaders + $0) }
            // The import's own speed first, nobody else uploading: then, with the others, what it
            // leaves them and how much it gives way.
            var aloneRate: Double?
            if uploaders > 0 {
                let solo = try await server.individualSession(1 + uploaders + rounds)
                let memory = ResidentMemoryPeak.start()
                let started = ContinuousClock.now
                let id = try await upload(file, size: size, server: server, token: solo)
                let job = try await waitForDone(id, server: server, token: solo)
                let rate = Double(job["records"] as? Int ?? 0) / (ContinuousClock.now - started).inSeconds
                print(
                    String(
                        format: "the import alone (nobody else uploading): %.0f records/s end to end, server resident memory at most %.0f MiB "
                            + "above idle", rate, memory.end()))
                aloneRate = rate
            }
            let timeline = Timeline()
            let disk = try DiskProbe(directory: URL(fileURLWithPath: NSTemporaryDirectory()))
            defer { disk.stop() }
            let stopped = Atomic(false)
            defer { stopped.store(true, ordering: .relaxed) }  // also when a round fails
            let load = Task {
                try await Uploaders(server: server, tokens: others, rate: othersRate).run(into: timeline, until: { stopped.load(ordering: .relaxed) })
            }
            var windows = (
                without: [Range<ContinuousClock.Instant>](), uploading: [Range<ContinuousClock.Instant>](),
                reading: [Range<ContinuousClock.Instant>]()
            )
            var read = 0, importSeconds = 0.0, above = 0.0
            // Not counted: the first seconds of the load (its first partitions, caches, plans).
            try await Task.sleep(for: .seconds(5))
            for (index, person) in people.enumerated() {
                let round = try await runRound(index + 1, by: person, file: file, size: size, server: server, timeline: timeline, disk: disk.timeline)
                windows.without.append(round.quiet)
                windows.uploading.append(round.uploading)
                windows.reading.append(round.reading)
                read += round.records
                importSeconds += round.seconds
                above = max(above, round.aboveIdle)
                if index == people.count - 1 {
                    let types = (round.job["result"] as? [String: Any])?["types"] as? [String: [String: Int]] ?? [:]
                    print(
                        "stored by type (last round): "
                            + types.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value["accepted"] ?? 0)" }.joined(separator: ", "))
                }
            }
            stopped.store(true, ordering: .relaxed)
            try await load.value
            let storage = try await bytesPerRecord(server)

            let importing = windows.uploading + windows.reading
            let without = timeline.durations(in: windows.without), during = timeline.durations(in: importing)
            if let aloneRate {
                print(
                    String(
                        format: "records/s end to end (upload + reading): alone %.0f; with the others uploading, all rounds, %.0f", aloneRate,
                        Double(read) / importSeconds))
            } else {
                print(String(format: "records/s end to end (upload + reading), all rounds: %.0f", Double(read) / importSeconds))
            }
            print(String(format: "server resident memory: peak during an import %.0f MiB above its idle size before it", above))
            print(String(format: "storage: %.1f bytes per stored sample, indexes and TOAST included (%d samples)", storage.bytes, storage.samples))
            print("other individuals' uploads of 100 (ms), and the disk probe's 8 KiB fdatasync (ms), all rounds:")
            let named = [
                ("without an import", windows.without), ("during the imports", importing),
                ("  while uploading", windows.uploading), ("  after the upload", windows.reading),
            ]
            for (name, spans) in named {
                let latencies = timeline.durations(in: spans), syncs = disk.timeline.durations(in: spans)
                print(
                    "  " + name.padding(toLength: 20, withPad: " ", startingAt: 0)
                        + String(
                            format: "%6d uploads, p50 %6.1f, p95 %6.1f, p99 %6.1f (× %.2f of p99 without); disk p99 %6.1f, max %6.1f",
                            latencies.count, percentile(latencies, 0.5), percentile(latencies, 0.95), percentile(latencies, 0.99),
                            percentile(latencies, 0.99) / percentile(without, 0.99), percentile(syncs, 0.99), syncs.last ?? .nan))
            }
            if let aloneRate { BenchSummary.record("import", "records/s end to end alone (upload + reading)", format: "%.0f", aloneRate) }
            BenchSummary.record(
                "import", aloneRate == nil ? "records/s end to end (upload + reading)" : "records/s end to end with the others uploading",
                format: "%.0f", Double(read) / importSeconds)
            BenchSummary.record("import", "resident memory above idle during the import (MiB)", format: "%.0f", above)
            BenchSummary.record(
                "import", "others' upload p99 during / without the import", format: "× %.2f", percentile(during, 0.99) / percentile(without, 0.99))
        }
    }

    /// One round's windows, what its import read, and its finished job as the API answered it.
    private struct Round {
        let quiet: Range<ContinuousClock.Instant>
        let uploading: Range<ContinuousClock.Instant>
        let reading: Range<ContinuousClock.Instant>
        let records: Int
        /// The server's resident memory at its peak during the import, above its size before (MiB).
        let aboveIdle: Double
        let job: [String: Any]

        /// From the upload's start to the import's end.
        var seconds: Double { (reading.upperBound - uploading.lowerBound).inSeconds }
    }

    /// A window of `baselineSeconds` without an import, then one import by `person`, timed by
    /// phase; prints the round's line, and when the others' slow uploads came and what the disk
    /// probe saw meanwhile (a stall of the disk shows in both at once).
    private func runRound(
        _ number: Int, by person: String, file: URL, size: Int64, server: BenchServer, timeline: Timeline, disk: Timeline
    ) async throws -> Round {
        let quiet = ContinuousClock.now
        try await Task.sleep(for: .seconds(baselineSeconds))
        let memory = ResidentMemoryPeak.start()
        defer { _ = memory.end() }  // when the round fails
        let started = ContinuousClock.now
        let id = try await upload(file, size: size, server: server, token: person)
        let uploaded = ContinuousClock.now
        // Records read while the upload arrived (following it), so not left for after.
        let recordsAtUpload = (try await server.send(.GET, "/api/users/imports/\(id)", token: person).body["records"] as? Int) ?? 0
        let job = try await waitForDone(id, server: server, token: person)
        let finished = ContinuousClock.now
        let aboveIdle = memory.end()
        let records = job["records"] as? Int ?? 0
        let without = timeline.durations(in: [quiet..<started]), during = timeline.durations(in: [started..<finished])
        print(
            String(
                format:
                    "round %d: upload %.1f s (%.0f MB/s), then until done %.1f s; %.0f records/s end to end (%d read during the upload); "
                    + "others' p50 / p99 %.1f / %.1f ms without, %.1f / %.1f ms during (× %.2f)",
                number, (uploaded - started).inSeconds, Double(size) / 1e6 / (uploaded - started).inSeconds, (finished - uploaded).inSeconds,
                Double(records) / (finished - started).inSeconds, recordsAtUpload, percentile(without, 0.5), percentile(without, 0.99),
                percentile(during, 0.5), percentile(during, 0.99), percentile(during, 0.99) / percentile(without, 0.99)))
        // The uploads slower than twice the p99 without, by the second of the round they began in
        // (0 is the upload's start), and the disk probe's slowest fdatasync in each such second.
        let slow = timeline.events(in: started..<finished).filter { $0.milliseconds > 2 * percentile(without, 0.99) }
        let seconds = Dictionary(grouping: slow) { Int(exactly: ($0.began - started).inSeconds.rounded(.down)) ?? 0 }
        let syncs = disk.events(in: started..<finished)
        let described = seconds.keys.sorted().map { second in
            let window = (started + .seconds(second))..<(started + .seconds(second + 1))
            let worst = syncs.filter { window.contains($0.began) }.map(\.milliseconds).max() ?? 0
            let slowest = seconds[second]?.map(\.milliseconds).max() ?? 0
            return String(format: "%d s: %d (at most %.0f ms; disk %.0f ms)", second, seconds[second]?.count ?? 0, slowest, worst)
        }
        print(
            String(
                format: "  round %d: disk fdatasync p99 %.1f ms, max %.1f ms during the import (%.1f / %.1f without); "
                    + "others' uploads over twice the p99 without, by second from the upload's start (the upload ended at %.1f s): ",
                number, percentile(syncs.map(\.milliseconds).sorted(), 0.99), syncs.map(\.milliseconds).max() ?? 0,
                percentile(disk.durations(in: [quiet..<started]), 0.99), disk.durations(in: [quiet..<started]).last ?? 0,
                (uploaded - started).inSeconds) + (described.isEmpty ? "none" : described.joined(separator: "; ")))
        return Round(
            quiet: quiet..<started, uploading: started..<uploaded, reading: uploaded..<finished, records: records,
            aboveIdle: aboveIdle, job: job)
    }

    /// The export through the reader and the upload rules, as the worker reads it, without
    /// storing anything: records/s.
    private func readAlone(_ file: URL) throws -> Double {
        let handle = try FileHandle(forReadingFrom: file)
        defer { try? handle.close() }
        var reader = AppleHealthExportReader()
        let rules = IngestRules(), now = Date()
        var count = 0
        let started = ContinuousClock.now
        let check: (AppleHealthExportReader.Item) -> Void = { item in
            count += 1
            if case .sample(let raw) = item { _ = try? rules.validate(raw, now: now) }
        }
        while let data = try handle.read(upToCount: 256 * 1024), !data.isEmpty {
            try reader.feed(data, check)
        }
        try reader.finish(check)
        return Double(count) / (ContinuousClock.now - started).inSeconds
    }

    /// Streams the file to `POST /api/users/imports`; the import's id.
    private func upload(_ file: URL, size: Int64, server: BenchServer, token: String) async throws -> String {
        let handle = try FileHandle(forReadingFrom: file)
        defer { try? handle.close() }
        var request = HTTPClientRequest(url: "\(server.base)/api/users/imports")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Content-Type", value: "application/xml")
        nonisolated(unsafe) let reading = handle
        let pieces = AsyncThrowingStream<ByteBuffer, any Error> {
            guard let data = try reading.read(upToCount: 1 << 20), !data.isEmpty else { return nil }
            return ByteBuffer(bytes: data)
        }
        request.body = .stream(pieces, length: .known(size))
        let response = try await server.client.execute(request, timeout: .seconds(3600))
        let body = try await response.body.collect(upTo: 1 << 20)
        guard response.status == .accepted,
            let json = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any], let id = json["id"] as? String
        else { throw ValidationError("the import answered \(response.status): \(String(buffer: body).prefix(300))") }
        return id
    }

    private func waitForDone(_ id: String, server: BenchServer, token: String) async throws -> [String: Any] {
        while true {
            let (_, job) = try await server.send(.GET, "/api/users/imports/\(id)", token: token)
            switch job["state"] as? String {
            case "done": return job
            case "failed", "cancelled": throw ValidationError("the import ended \(job["state"] ?? ""): \(job["failure"] ?? "")")
            default: try await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    private func bytesPerRecord(_ server: BenchServer) async throws -> (bytes: Double, samples: Int) {
        let database = Database(configuration: server.databaseURL.clientConfiguration(maximumConnections: 1), logger: server.logger)
        return try await database.whileRunning {
            let footprint = try await HealthDataStore(database: database, partitions: PartitionMaintainer(database: database)).storageFootprint()
            return (Double(footprint.bytes) / Double(max(1, footprint.samples)), Int(footprint.samples))
        }
    }
}

/// Individuals uploading 100 heart-rate samples at a time, timing each. With a `rate`, each
/// starts its uploads on a fixed schedule (an upload that is due while the previous one is still
/// out starts when it is answered, and is timed from when it was due); without, one upload each
/// in flight, the next as soon as it is answered.
private struct Uploaders: Sendable {
    let server: BenchServer
    let tokens: [String]
    let rate: Double

    /// Uploads until `done`, each timed into `timeline`.
    func run(into timeline: Timeline, until done: @escaping @Sendable () -> Bool) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, token) in tokens.enumerated() {
                group.addTask {
                    var batch = 0
                    let formatter = ISO8601DateFormatter()
                    let origin = Date().addingTimeInterval(-20 * 86_400 + Double(index) * 3_600)
                    let period: Duration? = rate > 0 ? .nanoseconds(Int64((1e9 / rate).rounded())) : nil
                    // Spread over the period, so that the individuals do not upload in step.
                    var due = ContinuousClock.now + (period ?? .zero) * index / max(1, tokens.count)
                    while !done() {
                        if period != nil { try await Task.sleep(until: due) }
                        let items = (0..<100).map { second in
                            let time = formatter.string(from: origin.addingTimeInterval(Double(batch * 100 + second)))
                            return #"{"type":"heartRate","value":\#(60 + second % 40),"start":"\#(time)"}"#
                        }
                        let sent = period == nil ? ContinuousClock.now : due
                        let (status, _) = try await server.send(
                            .POST, "/api/users/data", token: token, json: #"{"items":["# + items.joined(separator: ",") + "]}")
                        guard status == .ok else { throw ValidationError("an upload answered \(status)") }
                        timeline.add(began: sent, milliseconds: (ContinuousClock.now - sent).inSeconds * 1000)
                        if let period { due += period }
                        batch += 1
                    }
                }
            }
            try await group.waitForAll()
        }
    }
}

/// Timed events — the others' uploads, the disk probe's writes — by when each began.
private final class Timeline: Sendable {
    private let events = Mutex<[(began: ContinuousClock.Instant, milliseconds: Double)]>([])

    func add(began: ContinuousClock.Instant, milliseconds: Double) {
        events.withLock { $0.append((began, milliseconds)) }
    }

    /// The events that began within `window`, in the order they were added.
    func events(in window: Range<ContinuousClock.Instant>) -> [(began: ContinuousClock.Instant, milliseconds: Double)] {
        events.withLock { all in all.filter { window.contains($0.began) } }
    }

    /// The durations of the events that began within `windows`, sorted.
    func durations(in windows: [Range<ContinuousClock.Instant>]) -> [Double] {
        events.withLock { all in all.filter { event in windows.contains { $0.contains(event.began) } }.map(\.milliseconds) }.sorted()
    }
}

/// The disk's own stalls, apart from the server's: a thread of its own writes 8 KiB to a file
/// of its own and `fdatasync`s it every 50 ms, on the filesystem the bench's database is on,
/// timed. A stall seen here is one every commit on that filesystem waits for (on ext4 an
/// `fsync` waits for the journal, which waits for other files' data being written back), not
/// one of our server's queues: runs on this machine showed such stalls of 60–350 ms while the
/// imports wrote, and none of the probe's 5 ms sleeps late by more than 50 ms (not the CPU).
private final class DiskProbe: Sendable {
    let timeline = Timeline()
    private let stopped = Atomic(false)

    init(directory: URL) throws {
        let path = directory.appendingPathComponent("data4help-bench-disk-probe-\(getpid())").path
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard descriptor >= 0 else { throw ValidationError("cannot open \(path) for the disk probe") }
        unlink(path)  // the descriptor keeps it until the probe stops
        let thread = Thread { [self] in
            let page = [UInt8](repeating: 0x2A, count: 8_192)
            while !self.stopped.load(ordering: .relaxed) {
                let began = ContinuousClock.now
                _ = page.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
                _ = fdatasync(descriptor)
                self.timeline.add(began: began, milliseconds: (ContinuousClock.now - began).inSeconds * 1000)
                Thread.sleep(forTimeInterval: 0.05)
            }
            close(descriptor)
        }
        thread.name = "data4help-bench-disk-probe"
        thread.start()
    }

    func stop() { stopped.store(true, ordering: .relaxed) }
}

/// The server's resident memory at its peak from `start()` until `end()`, sampled every 200 ms.
private final class ResidentMemoryPeak: Sendable {
    private let idle = HeldResourceGauges.residentBytes()
    private let peak = Mutex(0)
    private let sampling = Atomic(true)

    static func start() -> ResidentMemoryPeak {
        let memory = ResidentMemoryPeak()
        Task { await memory.sample() }
        return memory
    }

    private func sample() async {
        while sampling.load(ordering: .relaxed) {
            let now = HeldResourceGauges.residentBytes()
            peak.withLock { $0 = max($0, now) }
            try? await Task.sleep(for: .milliseconds(200))
        }
    }

    /// Stops sampling; the peak above the size at the start, in MiB.
    func end() -> Double {
        sampling.store(false, ordering: .relaxed)
        return Double(max(peak.withLock { $0 }, idle) - idle) / 1_048_576
    }
}

/// Writes a synthetic `export.xml` in the Health app's shape, a record at a time (never held
/// whole): the types in the proportions of a heavy Watch user's year, sorted by type as the app
/// writes them, over the 365 days before yesterday.
private struct ExportWriter {
    let records: Int
    let workouts: Int

    /// Type, unit, share of the records, value for the n-th record, stored by us or not.
    private static let kinds: [(type: String, unit: String?, share: Double, value: @Sendable (Int) -> String, interval: Double)] = [
        ("HKQuantityTypeIdentifierHeartRate", "count/min", 0.30, { String(55 + ($0 * 7) % 70) }, 0),
        ("HKQuantityTypeIdentifierActiveEnergyBurned", "Cal", 0.22, { String(format: "%.3f", 0.2 + Double($0 % 50) / 10) }, 60),
        ("HKQuantityTypeIdentifierBasalEnergyBurned", "Cal", 0.20, { String(format: "%.3f", 1.0 + Double($0 % 10) / 10) }, 60),
        ("HKQuantityTypeIdentifierStepCount", "count", 0.11, { String(10 + $0 % 120) }, 120),
        ("HKQuantityTypeIdentifierDistanceWalkingRunning", "km", 0.11, { String(format: "%.4f", 0.01 + Double($0 % 90) / 1000) }, 120),
        (
            "HKCategoryTypeIdentifierSleepAnalysis", nil, 0.02,
            {
                [
                    "HKCategoryValueSleepAnalysisAsleepCore", "HKCategoryValueSleepAnalysisAsleepDeep", "HKCategoryValueSleepAnalysisAsleepREM",
                    "HKCategoryValueSleepAnalysisAwake",
                ][$0 % 4]
            }, 600
        ),
        ("HKQuantityTypeIdentifierOxygenSaturation", "%", 0.02, { String(format: "%.2f", 0.94 + Double($0 % 5) / 100) }, 0),
        ("HKQuantityTypeIdentifierRespiratoryRate", "count/min", 0.02, { String(12 + $0 % 8) }, 0),
    ]

    func write(to url: URL) throws -> (records: Int, stored: Int) {
        FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var buffer = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE HealthData [
            <!-- HealthKit Export Version: 14 -->
            <!ELEMENT HealthData (ExportDate,Me,(Record|Correlation|Workout|ActivitySummary|ClinicalRecord)*)>
            <!ATTLIST HealthData locale CDATA #REQUIRED>
            ]>
            <HealthData locale="en_GB">
             <ExportDate value="\(Self.date(Date()))"/>
             <Me HKCharacteristicTypeIdentifierDateOfBirth="1985-05-02" HKCharacteristicTypeIdentifierBiologicalSex="HKBiologicalSexMale"/>

            """
        let end = Date().addingTimeInterval(-86_400).timeIntervalSince1970.rounded(.down)
        let span = 365.0 * 86_400
        var written = 0, stored = 0
        for kind in Self.kinds {
            let count = Int(Double(records) * kind.share)
            let step = span / Double(max(1, count))
            for n in 0..<count {
                let start = Date(timeIntervalSince1970: end - span + Double(n) * step)
                let startText = Self.date(start)
                let endText = kind.interval > 0 ? Self.date(start.addingTimeInterval(kind.interval)) : startText
                let unit = kind.unit.map { #" unit="\#($0)""# } ?? ""
                buffer +=
                    #" <Record type="\#(kind.type)" sourceName="Bench’s Apple Watch" sourceVersion="10.1"\#(unit) creationDate="\#(endText)" startDate="\#(startText)" endDate="\#(endText)" value="\#(kind.value(n))"/>"#
                buffer += "\n"
                written += 1
                if !kind.type.contains("Basal") { stored += 1 }
                if buffer.utf8.count > 1 << 20 {
                    try handle.write(contentsOf: Data(buffer.utf8))
                    buffer.removeAll(keepingCapacity: true)
                }
            }
        }
        for index in 0..<workouts {
            let start = Date(timeIntervalSince1970: end - span + Double(index) * span / Double(max(1, workouts)) + 18 * 3_600)
            let finish = start.addingTimeInterval(2_700)
            buffer += """
                 <Workout workoutActivityType="HKWorkoutActivityTypeRunning" duration="45" durationUnit="min" sourceName="Bench’s Apple Watch" startDate="\(Self.date(start))" endDate="\(Self.date(finish))">
                  <WorkoutStatistics type="HKQuantityTypeIdentifierActiveEnergyBurned" startDate="\(Self.date(start))" endDate="\(Self.date(finish))" sum="520" unit="Cal"/>
                  <WorkoutStatistics type="HKQuantityTypeIdentifierDistanceWalkingRunning" startDate="\(Self.date(start))" endDate="\(Self.date(finish))" sum="8.2" unit="km"/>
                  <WorkoutStatistics type="HKQuantityTypeIdentifierHeartRate" startDate="\(Self.date(start))" endDate="\(Self.date(finish))" average="152" minimum="96" maximum="181" unit="count/min"/>
                  <WorkoutRoute sourceName="Bench’s Apple Watch" startDate="\(Self.date(start))" endDate="\(Self.date(finish))">
                   <FileReference path="/workout-routes/route_\(index).gpx"/>
                  </WorkoutRoute>
                 </Workout>

                """
        }
        buffer += "</HealthData>\n"
        try handle.write(contentsOf: Data(buffer.utf8))
        // On disk before anything is measured: the file is the phone's, not the server's, and
        // the kernel writing its hundreds of MB back 30 s later (while the database commits)
        // stalled every commit's fsync behind it, by 100–300 ms (PostgreSQL's log, ext4).
        try handle.synchronize()
        return (written, stored)
    }

    /// `2023-05-01 08:30:00 +0000`.
    private static func date(_ date: Date) -> String {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        let (civil, secondOfDay) = CivilDate.split(unixSeconds: Int(truncatingIfNeeded: seconds))
        return String(
            format: "%04ld-%02ld-%02ld %02ld:%02ld:%02ld +0000", civil.year, civil.month, civil.day, secondOfDay / 3600, secondOfDay / 60 % 60,
            secondOfDay % 60
        )
    }
}
