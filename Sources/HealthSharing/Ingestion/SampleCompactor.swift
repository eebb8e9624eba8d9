import Data4HelpCore
import DatabaseLink
import Foundation
import Logging
import ServiceLifecycle

/// Compacts settled history (migration 0046): every `interval`, the minute blocks of the UTC
/// 8-hour windows older than the late-data horizon become one 8-hour block per type and window
/// where it holds at most 3,600 readings, else one hour block per type and hour (migration 0050) —
/// a fifth of the bytes or less for a watch's sparse readings, about a quarter at 1 Hz (`bench
/// storage`) — and every reader answers as before (`SampleCompactionTests`).
///
/// One instance runs a pass at a time (a lease in the database, renewed with each batch). A pass
/// goes through the individuals by id, a batch at a time, recording the last one done, so a pass
/// cut short resumes there; merging is idempotent (a merged hour has no minute block left). The
/// first pass over a database written before compaction existed compacts all its history this way,
/// online. Uploads keep the hours behind the horizon compact (`DataManager` stores a sample of a
/// settled hour with no block in an hour block), so later passes only meet the hours that crossed
/// the horizon since the last one.
package struct SampleCompactor: Service {
    /// How old an hour must be: the late-data horizon and an hour more, so that an instance whose
    /// clock runs behind still never writes a minute block behind a pass.
    package static let horizon = DataManager.settledAfter + 3_600
    /// Individuals looked at per batch; the lease is renewed after each.
    package static let batch = 500
    static let lease: TimeInterval = 600

    let store: SampleCompactionStore
    let interval: Duration
    let schemaReady: StartupGate
    let logger: Logger

    package init(database: Database, interval: Duration, schemaReady: StartupGate, logger: Logger) {
        store = SampleCompactionStore(database: database)
        self.interval = interval
        self.schemaReady = schemaReady
        self.logger = logger
    }

    package func run() async throws {
        await repeatWhenReady(every: interval, schemaReady: schemaReady, job: "sample compaction", logger: logger) { _ = try await pass() }
    }

    /// What a pass did (nil: another instance holds the pass).
    package struct Report: Sendable, Equatable {
        /// Imports' spans compacted (`SampleCompactionStore.requests`).
        package var requests = 0
        package var individuals = 0
        package var merged = SampleCompactionStore.Merged()
        package var finished = false
    }

    /// Runs the pass in progress, or a new one, to its end — or for `batches` batches of
    /// `batchSize` individuals only (a pass cut short, as by a crash; the next call resumes it).
    package func pass(batches: Int = .max, batchSize: Int = Self.batch, horizon: TimeInterval = Self.horizon) async throws -> Report? {
        guard var pass = try await store.claimPass(horizon: horizon, lease: Self.lease) else { return nil }
        var report = Report()
        // Imports' spans first, up to the pass's horizon (the windows after it are the pass's to
        // come); `compact` takes whole windows, so a span's last window is rounded up.
        for request in try await store.requests(limit: Self.batch) {
            let end = (request.before.timeIntervalSince1970 / SampleCompactionStore.windowSeconds).rounded(.up) * SampleCompactionStore.windowSeconds
            report.merged += try await store.compact(
                individualId: request.individualId, from: request.from, before: min(Date(timeIntervalSince1970: end), pass.before))
            try await store.settle(request)
            try await store.recordProgress(after: pass.after, lease: Self.lease)
            report.requests += 1
        }
        for _ in 0..<batches {
            let (ids, last) = try await store.individualsToCompact(after: pass.after, limit: batchSize, from: pass.from, before: pass.before)
            for id in ids {
                let merged = try await store.compact(individualId: id, from: pass.from, before: pass.before)
                // Renewed per individual: one with years of 1 Hz readings takes minutes.
                try await store.recordProgress(after: pass.after, lease: Self.lease)
                report.individuals += 1
                report.merged += merged
            }
            guard let last else {
                try await store.finish(pass)
                report.finished = true
                break
            }
            pass.after = last
            try await store.recordProgress(after: last, lease: Self.lease)
        }
        if !report.finished { try await store.recordProgress(after: pass.after, lease: 0) }  // cut short: free for the next call
        if report.individuals > 0 || report.requests > 0 {
            logger.info(
                "settled hours compacted",
                metadata: [
                    "compaction.requests": "\(report.requests)", "compaction.individuals": "\(report.individuals)",
                    "compaction.blocks_replaced": "\(report.merged.blocksReplaced)",
                    "compaction.hour_blocks": "\(report.merged.hourBlocks)", "compaction.eight_hour_blocks": "\(report.merged.eightHourBlocks)",
                    "compaction.samples": "\(report.merged.samples)",
                    "compaction.finished": "\(report.finished)",
                ])
        }
        return report
    }
}
