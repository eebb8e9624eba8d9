import AccessManager
import Data4HelpCore
import DatabaseLink
import Foundation
import Synchronization

/// What one upload did: how many items were stored, how many were already there, and which
/// were refused and why (by their index in the upload).
package struct IngestBatchResult: Sendable, Equatable {
    package struct Rejection: Sendable, Equatable {
        /// The refused item's position in `items`; a series' values are numbered after the items,
        /// in order, and a series refused whole is one rejection at its first value's position.
        package let index: Int
        package let reason: String
        /// A JSON pointer to what was refused: `/items/3`, `/series/0/values/17`, `/series/1`.
        package let pointer: String

        package init(index: Int, reason: String, pointer: String? = nil) {
            self.index = index
            self.reason = reason
            self.pointer = pointer ?? "/items/\(index)"
        }
    }

    package let accepted: Int
    package let duplicates: Int
    package let rejected: [Rejection]
}

/// The Data Manager: the path every sample and location fix takes into the platform.
package struct DataManager: Sendable {
    /// The largest upload accepted, in items.
    package static let maximumBatchSize = 10_000

    let store: HealthDataStore
    let events: StoredDataEvents
    let rules: IngestRules
    let checks: [any IngestTransactionCheck]
    /// Live uploads being stored by this instance: imported history waits for a moment without
    /// any before each batch (see `ingestHistory`).
    let live = LiveIngests()

    /// `checks` run inside every ingest transaction on the newly stored samples (AutomatedSOS).
    package init(
        database: Database, partitions: PartitionMaintainer, events: StoredDataEvents, checks: [any IngestTransactionCheck] = [],
        rules: IngestRules = IngestRules()
    ) {
        self.store = HealthDataStore(database: database, partitions: partitions)
        self.checks = checks
        self.events = events
        self.rules = rules
    }

    /// Stores the valid items of an individual's upload — committed before this returns — and
    /// announces the newly stored ones. Invalid items are refused one by one; the rest are kept.
    package func ingest(_ items: [RawIngestItem], for individual: IndividualID, now: Date = Date()) async throws -> IngestBatchResult {
        try await ingest(RawUpload(items: items), for: individual, now: now)
    }

    /// Stores an upload's items and series (see `ingest(_:for:now:)`).
    package func ingest(_ upload: RawUpload, for individual: IndividualID, now: Date = Date()) async throws -> IngestBatchResult {
        live.enter()
        defer { live.leave() }
        let batch = validate(upload, now: now)
        // A sample of a settled hour that has no block yet starts that hour's block, as an
        // imported one does: no minute block is ever written behind the compactor.
        let outcome = try await store(batch, for: individual, now: now, wholeHoursBefore: now - Self.settledAfter) {
            readings, _, transaction in
            guard !readings.isEmpty else { return }
            for check in checks { try await check.samplesStored(readings, in: transaction) }
        }
        let stored = StoredDataBatch(
            individualId: individual.rowId,
            samples: outcome.newSamples.map { batch.samples[$0] },
            locations: outcome.newLocations.map { batch.fixes[$0] }
        )
        await events.announce(stored)
        let accepted = stored.samples.count + stored.locations.count
        return IngestBatchResult(accepted: accepted, duplicates: batch.samples.count + batch.fixes.count - accepted, rejected: batch.rejected)
    }

    /// Stores a batch of imported history: the upload rules apply, but no AutomatedSOS check runs
    /// on it (history opens no incident) and nothing is announced live. `commit` runs in the
    /// batch's transaction with what it stored — the import's progress commits with its data.
    /// Hours older than `settledAfter` are stored in hour blocks (migration 0032).
    package func ingestHistory<Committed>(
        _ items: [RawIngestItem], for individual: IndividualID, now: Date = Date(),
        commit: (HistoryBatch, IngestTransaction) async throws -> Committed
    ) async throws -> Committed {
        // Live uploads first: a batch of history starts when none is being stored here, or
        // after `historyYield` at most (so an import still moves under a steady stream).
        await live.quiet(atMost: Self.historyYield)
        let batch = validate(RawUpload(items: items), now: now)
        var committed: Committed?
        _ = try await store(batch, for: individual, now: now, announce: false, wholeHoursBefore: now - Self.settledAfter) {
            readings, samples, transaction in
            var stored: [SampleType: Int] = [:], duplicates: [SampleType: Int] = [:], spans: [SampleType: DataSpan] = [:]
            for sample in samples { duplicates[sample.type, default: 0] += 1 }
            for reading in readings {
                guard let type = SampleType(storageCode: reading.typeCode) else { continue }
                stored[type, default: 0] += 1
                duplicates[type, default: 0] -= 1
                spans[type] = DataSpan(firstMs: reading.timeMs, lastMs: reading.timeMs).union(spans[type])
            }
            let locations = (stored: transaction.newLocations, duplicates: batch.fixes.count - transaction.newLocations)
            committed = try await commit(
                HistoryBatch(
                    stored: stored, duplicates: duplicates.filter { $0.value > 0 }, locations: locations, rejected: batch.rejected,
                    spans: spans, locationSpan: transaction.newLocationSpan),
                transaction
            )
        }
        guard let committed else { preconditionFailure("HealthDataStore.ingest runs afterStoring in every transaction it commits") }
        return committed
    }

    /// Whether others' uploads are arriving at this instance (one is being stored, or one started
    /// within the last second): imported history is then stored in smaller batches.
    package var liveUploadsArriving: Bool { live.active(within: .seconds(1)) }

    /// The longest a batch of imported history waits for live uploads to finish.
    package static let historyYield: Duration = .milliseconds(250)

    /// How old an hour must be to be stored in one hour block (an import's, an upload's into an
    /// hour with no block yet, and `SampleCompactor`'s merge): older than anything AutomatedSOS,
    /// the live streams and a phone's late uploads still amend often.
    package static let settledAfter: TimeInterval = 49 * 3_600

    /// An upload's items checked by the rules: the samples and fixes to store, the rest refused.
    private struct ValidatedBatch {
        var samples: [NewSample] = []
        var fixes: [NewLocationFix] = []
        var rejected: [IngestBatchResult.Rejection] = []
    }

    private func validate(_ upload: RawUpload, now: Date) -> ValidatedBatch {
        var batch = ValidatedBatch()
        let items = upload.items
        for index in items.indices {
            do {
                switch try rules.validate(items[index], now: now) {
                case .sample(let sample): batch.samples.append(sample)
                case .location(let fix): batch.fixes.append(fix)
                }
            } catch {
                batch.rejected.append(.init(index: index, reason: error.reason))
            }
        }
        var first = items.count
        for (position, series) in upload.series.enumerated() {
            let checked = rules.validate(series, now: now)
            batch.samples.append(contentsOf: checked.samples.lazy.map(\.sample))
            for refusal in checked.refused {
                if let slot = refusal.slot {
                    batch.rejected.append(.init(index: first + slot, reason: refusal.reason, pointer: "/series/\(position)/values/\(slot)"))
                } else {
                    batch.rejected.append(.init(index: first, reason: refusal.reason, pointer: "/series/\(position)"))
                }
            }
            first += series.positions
        }
        return batch
    }

    private func store(
        _ batch: ValidatedBatch, for individual: IndividualID, now: Date, announce: Bool = true, wholeHoursBefore: Date? = nil,
        inTransaction: ([StoredReading], [NewSample], IngestTransaction) async throws -> Void
    ) async throws -> IngestOutcome {
        var sampleColumns = SampleColumns()
        for sample in batch.samples {
            let duration = sample.end.map { Int32(($0.timeIntervalSince(sample.start) * 1000).rounded()) }
            sampleColumns.append(
                type: sample.type.storageCode, start: sample.start, value: sample.value, durationMs: duration, key: sample.key, source: sample.source
            )
        }
        var locationColumns = LocationColumns()
        for fix in batch.fixes {
            locationColumns.append(
                timeMs: fix.time.epochMilliseconds, key: fix.key, latitude: fix.latitude, longitude: fix.longitude, accuracy: fix.accuracy,
                altitude: fix.altitude)
        }
        return try await store.ingest(
            individualId: individual.rowId, samples: sampleColumns, locations: locationColumns, receivedAt: now, announce: announce,
            wholeHoursBefore: wholeHoursBefore
        ) {
            readings, transaction in
            try await inTransaction(readings, batch.samples, transaction)
        }
    }
}

/// What one batch of imported history stored, by type, and which items were refused.
package struct HistoryBatch: Sendable, Equatable {
    package let stored: [SampleType: Int]
    package let duplicates: [SampleType: Int]
    /// Location fixes stored, and those that were there already.
    package let locations: (stored: Int, duplicates: Int)
    package let rejected: [IngestBatchResult.Rejection]
    /// The times of what was stored, by type, and of the fixes stored.
    package let spans: [SampleType: DataSpan]
    package let locationSpan: DataSpan?

    package static func == (lhs: HistoryBatch, rhs: HistoryBatch) -> Bool {
        lhs.stored == rhs.stored && lhs.duplicates == rhs.duplicates && lhs.locations == rhs.locations && lhs.rejected == rhs.rejected
            && lhs.spans == rhs.spans && lhs.locationSpan == rhs.locationSpan
    }
}

extension SampleType {
    /// Quantities get daily rollups (count, sum, min, max); categories such as sleep stages do not.
    package var hasDailyRollup: Bool {
        if case .quantity = definition { return true }
        return false
    }
}

/// How many live uploads this instance is storing, for imported history to give way to them.
final class LiveIngests: Sendable {
    private let count = Atomic<Int>(0)
    /// When the last live upload started, in nanoseconds after `origin` (-1: none yet).
    private let lastEntered = Atomic<Int64>(-1)
    private let origin = ContinuousClock.now

    func enter() {
        count.add(1, ordering: .relaxed)
        let (seconds, attoseconds) = (ContinuousClock.now - origin).components
        lastEntered.store(seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000, ordering: .relaxed)
    }
    func leave() { count.subtract(1, ordering: .relaxed) }

    var inFlight: Int { count.load(ordering: .relaxed) }

    /// Whether a live upload is being stored or started within `window`.
    func active(within window: Duration) -> Bool {
        guard inFlight == 0 else { return true }
        let last = lastEntered.load(ordering: .relaxed)
        return last >= 0 && ContinuousClock.now - (origin + .nanoseconds(last)) < window
    }

    /// Returns once no live upload is in flight, or after `limit`.
    func quiet(atMost limit: Duration) async {
        let deadline = ContinuousClock.now + limit
        while inFlight > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(2))
        }
    }
}
