import AccessManager
import Data4HelpCore
import DatabaseLink
import Foundation

/// What one upload did: how many items were stored, how many were already there, and which
/// were refused and why (by their index in the upload).
package struct IngestBatchResult: Sendable, Equatable {
    package struct Rejection: Sendable, Equatable {
        package let index: Int
        package let reason: String
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
        let individualId = individual.rowId
        var samples: [NewSample] = [], fixes: [NewLocationFix] = []
        var rejected: [IngestBatchResult.Rejection] = []
        for (index, raw) in items.enumerated() {
            do {
                switch try rules.validate(raw, now: now) {
                case .sample(let sample): samples.append(sample)
                case .location(let fix): fixes.append(fix)
                }
            } catch {
                rejected.append(.init(index: index, reason: error.reason))
            }
        }
        var sampleColumns = SampleColumns()
        for sample in samples {
            let duration = sample.end.map { Int32(($0.timeIntervalSince(sample.start) * 1000).rounded()) }
            sampleColumns.append(
                type: sample.type.storageCode, start: sample.start, value: sample.value, durationMs: duration, key: sample.key, source: sample.source
            )
        }
        var locationColumns = LocationColumns()
        for fix in fixes {
            locationColumns.append(timeMs: fix.time.epochMilliseconds, key: fix.key, latitude: fix.latitude, longitude: fix.longitude, accuracy: fix.accuracy, altitude: fix.altitude)
        }
        let outcome = try await store.ingest(individualId: individualId, samples: sampleColumns, locations: locationColumns, receivedAt: now) {
            readings, transaction in
            for check in checks { try await check.samplesStored(readings, in: transaction) }
        }
        let stored = StoredDataBatch(
            individualId: individualId,
            samples: outcome.newSamples.map { samples[$0] },
            locations: outcome.newLocations.map { fixes[$0] }
        )
        await events.announce(stored)
        let accepted = stored.samples.count + stored.locations.count
        return IngestBatchResult(accepted: accepted, duplicates: samples.count + fixes.count - accepted, rejected: rejected)
    }
}

extension SampleType {
    /// Quantities get daily rollups (count, sum, min, max); categories such as sleep stages do not.
    package var hasDailyRollup: Bool {
        if case .quantity = definition { return true }
        return false
    }
}
