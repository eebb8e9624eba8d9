import Data4HelpCore
import Logging
import Metrics
import NIOCore
import NIOPosix
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The connection pool every store runs its queries through.
///
/// A thin wrapper over `PostgresClient` (itself a pool and a ServiceLifecycle service) that
/// also publishes pool usage as metrics: `db_pool_connections_in_use` and
/// `db_pool_connections_max`.
package struct Database: Sendable {
    /// The pool; run it as a service (`PoolService`) or around a body (`whileRunning`).
    package let client: PostgresClient
    package let logger: Logger
    private let inUse: Meter
    /// Fails a leased connection's statements when it closes (see `LeasedConnection`).
    private let watch = ConnectionWatch()
    /// Set on a replica's pool seen through `ReadReplica.database`: each lease asks it first.
    private var replica: ReadReplica?
    /// Opens when the pool's run loop starts (`startPool`): a lease waits for it, since
    /// postgres-nio warns of — and would wait on — a lease before `PostgresClient.run()`, and the
    /// services that use the pool start at the same time as the one that runs it.
    private let running = StartupGate()

    /// The event loops every pool's connections run on, apart from the HTTP server's.
    ///
    /// On the server's loops (NIO's shared group, postgres-nio's default), a reply from PostgreSQL
    /// waited for whatever that loop had queued before it: a loop runs all its queued tasks before
    /// it reads its sockets again, and a live run's batch queues a frame write for each of the
    /// loop's thousand spectators (about 12 ms of writes). A runner's post waits for two replies
    /// (its read, then its write's commit), so it paid that twice. `bench live` at the defaults,
    /// six alternated pairs of one build (the pool's group behind a switch): fix → update p99
    /// 87.0–126.2 ms, median 98.0, against 99.7–138.0, median 123.9; the post's p99 43.8–83.6 ms
    /// against 51.4–89.3. The city race did not separate (two pairs: 238.2 and 240.3 ms against
    /// 240.3 and 258.1).
    ///
    /// Half the cores, at least one: the pools' work (encoding statements, decoding rows) is a
    /// fraction of the server's, and `bench ingest` did not separate one loop from two.
    package static let eventLoops = MultiThreadedEventLoopGroup(numberOfThreads: max(1, System.coreCount / 2))

    /// `metricsPrefix` names the pool's gauges (`<prefix>_connections_in_use`, `…_max`).
    package init(configuration: PostgresClient.Configuration, logger: Logger, metricsPrefix: String = "db_pool") {
        self.client = PostgresClient(configuration: configuration, eventLoopGroup: Self.eventLoops, backgroundLogger: logger)
        self.logger = logger
        self.inUse = Meter(label: "\(metricsPrefix)_connections_in_use")
        Gauge(label: "\(metricsPrefix)_connections_max").record(configuration.options.maximumConnections)
    }

    /// This pool with every lease routed by the replica (to it, or to the primary).
    func routed(through replica: ReadReplica) -> Database {
        var copy = self
        copy.replica = replica
        return copy
    }

    /// Runs the pool for the duration of the body, for commands and tests that have no
    /// service group of their own (the server runs it as a service instead: `PoolService`).
    package func whileRunning<Result: Sendable>(_ body: @Sendable () async throws -> Result) async throws -> Result {
        let pool = startPool()
        do {
            let result = try await body()
            await stop(pool)
            return result
        } catch {
            await stop(pool)
            throw error
        }
    }

    /// How long a pool may take to stop once asked: it closes its connections, which takes
    /// milliseconds.
    package static let stopLimit = Duration.seconds(15)

    /// Cancels the pool's run and waits for it, at most `limit`. PostgresNIO's pool (1.33) has been
    /// seen to never return from `run()` after being cancelled with every connection already
    /// closed (issue 18: a test server's pool; a test's pool after a replica's replay was paused and
    /// resumed): a process that awaited it hung for good. Past the limit this logs it and returns
    /// without the pool — nothing is left open by then but the pool's own task. A cancelled caller
    /// stops waiting at once. True when it stopped.
    @discardableResult
    package func stop(_ pool: Task<Void, Never>, within limit: Duration = Database.stopLimit) async -> Bool {
        pool.cancel()
        let stopped = await Self.ended(pool, within: limit)
        if stopped {
            return true
        } else if Task.isCancelled {
            // The caller was cancelled (a shutdown past its bound): it does not wait any longer.
            logger.notice("the connection pool was asked to stop; not awaited, its caller was cancelled", metadata: ["pool": "\(client)"])
        } else {
            logger.error("the connection pool did not stop within \(limit) of being asked; left behind", metadata: ["pool": "\(client)"])
        }
        return false
    }

    /// Whether `task` ends within `limit` (it is not awaited past it), or before the caller is
    /// cancelled: a group cancelled at the end of its shutdown bound ends the wait at once.
    package static func ended(_ task: Task<Void, Never>, within limit: Duration) async -> Bool {
        (try? await withTimeout(limit) {
            await task.value
            return true
        }) ?? false
    }

    /// Runs the pool in a task of its own; leases wait until it has started.
    package func startPool() -> Task<Void, Never> {
        Task { [client, running] in
            running.open()  // run() marks the pool running first thing, with no suspension before it
            await client.run()
        }
    }

    /// Returns once the pool runs (at once, after the start): for code that leases through
    /// `client` directly.
    package func started() async {
        if !running.isOpen { await running.wait() }
    }

    /// Leases one connection for the closure (within a `TenantScope`: one scoped transaction).
    package func withConnection<Result>(
        isolation: isolated (any Actor)? = #isolation,
        _ body: (LeasedConnection) async throws -> sending Result
    ) async throws -> sending Result {
        if let replica, await !replica.serves() {
            return try await replica.primary.withConnection(isolation: isolation, body)
        }
        if TenantScope.thirdPartyId != nil {
            return try await withTransaction(isolation: isolation, body)  // the scope lasts one transaction
        }
        await started()
        inUse.increment()
        defer { inUse.decrement() }
        return try await client.withConnection(isolation: isolation) { connection in
            try await body(LeasedConnection(underlying: connection, watch: watch))
        }
    }

    /// Runs the closure in one transaction: committed when it returns, rolled back when it throws
    /// (and the error rethrown as it was, so that a unique violation or a domain error inside a
    /// transaction is classified like any other). Within a `TenantScope`, the transaction runs as
    /// the tenant role for that organisation.
    ///
    /// BEGIN, COMMIT and ROLLBACK go through `LeasedConnection` like every statement, so a
    /// connection the server closes mid-transaction fails the transaction instead of hanging it;
    /// a connection whose ROLLBACK fails is closed rather than handed back to the pool still
    /// inside a transaction.
    package func withTransaction<Result>(
        _ mode: TransactionMode = .readWrite,
        isolation: isolated (any Actor)? = #isolation,
        _ body: (LeasedConnection) async throws -> sending Result
    ) async throws -> sending Result {
        if let replica, await !replica.serves() {
            return try await replica.primary.withTransaction(mode, isolation: isolation, body)
        }
        await started()
        inUse.increment()
        defer { inUse.decrement() }
        return try await client.withConnection(isolation: isolation) { pooled in
            let connection = LeasedConnection(underlying: pooled, watch: watch)
            try await connection.query(mode.begin, logger: logger)
            let value: Result
            do {
                if let tenant = TenantScope.thirdPartyId {
                    try await connection.query(
                        "SELECT set_config('role', \(TenantScope.role), true), set_config('data4help.third_party_id', \(String(tenant)), true)",
                        logger: logger
                    )
                }
                value = try await body(connection)
            } catch {
                if !connection.isClosed {
                    do { try await connection.query("ROLLBACK", logger: logger) } catch { try? await pooled.close() }
                }
                throw error
            }
            try await connection.query("COMMIT", logger: logger)
            return value
        }
    }

    /// Runs one statement on any pooled connection and collects its (few) rows.
    @discardableResult
    package func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await withConnection { connection in
            try await connection.query(query, logger: logger).collect()
        }
    }
}

/// The pool as a service of the application: it runs until the application shuts down, then
/// stops within `Database.stopLimit` or is left behind with an error logged (see
/// `Database.stop`), so that a pool that never returns cannot keep the process from exiting.
package struct PoolService: Service {
    let database: Database

    package init(_ database: Database) {
        self.database = database
    }

    package func run() async {
        let pool = database.startPool()
        try? await gracefulShutdown()  // returns at graceful shutdown, throws when cancelled: either way, stop
        await database.stop(pool)
    }
}

/// How a transaction begins.
package enum TransactionMode: Sendable {
    /// PostgreSQL's default: read committed, each statement seeing what had committed when it began.
    case readWrite
    /// Read only, every statement in the snapshot of the first (repeatable read; never a
    /// serialization failure, as it writes nothing).
    case readOnlySnapshot

    var begin: PostgresQuery {
        switch self {
        case .readWrite: "BEGIN"
        case .readOnlySnapshot: "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"
        }
    }
}
