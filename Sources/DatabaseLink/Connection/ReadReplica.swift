import Logging
import Metrics
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// A streaming replica of the primary (`READ_DATABASE_URL`) for the reads that tolerate its lag
/// — aggregate statistics and exports — so that they do not compete with ingest on the primary.
/// Whenever the replica cannot serve, those reads go to the primary instead: a replica is an
/// optimisation, never a dependency.
///
/// Run it as a service: it runs the replica's pool and asks the replica every `checkInterval`
/// whether it answers within `checkTimeout` (`db_replica_up`). Stores built over `database` then route every lease:
/// to the replica while it is up and its pool hands out a connection within `leaseTimeout`,
/// otherwise to the primary (`db_reads_routed_total{target}` counts both).
package final class ReadReplica: Service, Sendable {
    package struct Timing: Sendable {
        package var checkInterval = Duration.seconds(1)
        /// How long a health check may take before the replica counts as down.
        package var checkTimeout = Duration.seconds(1)
        package var leaseTimeout = Duration.milliseconds(500)
        /// How long an export waits for the replica to replay what the primary has written.
        package var catchUpTimeout = Duration.milliseconds(500)
        package init() {}
    }

    package let primary: Database
    /// The replica's own pool, unrouted.
    private let pool: Database
    private let timing: Timing
    private let logger: Logger
    private let up = Atomic<Bool>(false)
    private let upGauge = Gauge(label: "db_replica_up")
    private let toReplica = Counter(label: "db_reads_routed_total", dimensions: [("target", "replica")])
    private let toPrimary = Counter(label: "db_reads_routed_total", dimensions: [("target", "primary")])

    package init(primary: Database, configuration: PostgresClient.Configuration, timing: Timing = Timing(), logger: Logger) {
        self.primary = primary
        self.pool = Database(configuration: configuration, logger: logger, metricsPrefix: "db_replica_pool")
        self.timing = timing
        self.logger = logger
        upGauge.record(0)
    }

    /// Reads through this value go to the replica while it can serve them, else to the primary.
    package var database: Database { pool.routed(through: self) }

    /// For reads that must see what this request (or one just before it) wrote: the replica once
    /// it has replayed everything the primary had written when asked — waiting up to
    /// `catchUpTimeout`, ordinarily a few milliseconds — else the primary.
    package func readingYourWrites() async -> Database {
        guard up.load(ordering: .relaxed) else { return primary }
        do {
            // The insert position, not the write position: with asynchronous commit a commit's
            // record may still sit in the WAL buffers, past `pg_current_wal_lsn()`.
            let written = try await primary.query("SELECT pg_current_wal_insert_lsn()::text")
            guard let lsn = try written.first?.decode(String.self) else { return primary }
            let deadline = ContinuousClock.now + timing.catchUpTimeout
            while ContinuousClock.now < deadline {
                let remaining = ContinuousClock.now.duration(to: deadline)
                let caughtUp = try await withTimeout(remaining) { [pool] in
                    try await pool.query("SELECT coalesce(pg_last_wal_replay_lsn() >= \(lsn)::pg_lsn, true)").first?.decode(Bool.self) ?? false
                }
                if caughtUp { return database }
                try await Task.sleep(for: .milliseconds(5))
            }
        } catch {
            logger.debug("replica did not catch up; reading from the primary", metadata: ["error.type": "\(type(of: error))"])
        }
        return primary
    }

    /// Whether this lease may go to the replica; counted either way.
    func serves() async -> Bool {
        guard up.load(ordering: .relaxed) else {
            toPrimary.increment()
            return false
        }
        do {
            // An idle pooled connection is handed out at once; none within the limit means the
            // replica is gone or saturated, and the primary serves rather than the request waiting.
            try await withTimeout(timing.leaseTimeout) { [pool] in
                await pool.started()
                try await pool.client.withConnection { _ in }
            }
            toReplica.increment()
            return true
        } catch {
            markDown(because: "no connection within \(timing.leaseTimeout)")
            toPrimary.increment()
            return false
        }
    }

    package func run() async throws {
        let running = pool.startPool()
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await self.check()
                try? await Task.sleep(for: self.timing.checkInterval)
            }
        }
        await pool.stop(running)  // bounded: see `Database.stop`
    }

    /// One health check: the replica answers a query within `checkTimeout`.
    private func check() async {
        do {
            let inRecovery = try await withTimeout(timing.checkTimeout) { [pool] in
                try await pool.query("SELECT pg_is_in_recovery()").first?.decode(Bool.self) ?? false
            }
            if !up.exchange(true, ordering: .relaxed) {
                upGauge.record(1)
                logger.notice("read replica is up; aggregates and exports read from it", metadata: ["replica.in_recovery": "\(inRecovery)"])
            }
        } catch {
            markDown(because: "health check failed (\(type(of: error)))")
        }
    }

    private func markDown(because reason: String) {
        if up.exchange(false, ordering: .relaxed) {
            upGauge.record(0)
            logger.warning("read replica is down; its reads go to the primary", metadata: ["reason": "\(reason)"])
        }
    }
}
