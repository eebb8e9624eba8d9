import Logging
import Metrics
import PostgresNIO

/// The connection pool every store runs its queries through.
///
/// A thin wrapper over `PostgresClient` (itself a pool and a ServiceLifecycle service) that
/// also publishes pool usage as metrics: `db_pool_connections_in_use` and
/// `db_pool_connections_max`.
package struct Database: Sendable {
    /// The pool; run it as a service (`app.addServices(database.client)`).
    package let client: PostgresClient
    package let logger: Logger
    private let inUse: Meter
    /// Fails a leased connection's statements when it closes (see `LeasedConnection`).
    private let watch = ConnectionWatch()
    /// Set on a replica's pool seen through `ReadReplica.database`: each lease asks it first.
    private var replica: ReadReplica?

    /// `metricsPrefix` names the pool's gauges (`<prefix>_connections_in_use`, `…_max`).
    package init(configuration: PostgresClient.Configuration, logger: Logger, metricsPrefix: String = "db_pool") {
        self.client = PostgresClient(configuration: configuration, backgroundLogger: logger)
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
    /// service group of their own (the server runs `client` as a service instead).
    package func whileRunning<Result: Sendable>(_ body: @Sendable () async throws -> Result) async throws -> Result {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            return try await body()
        }
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
        isolation: isolated (any Actor)? = #isolation,
        _ body: (LeasedConnection) async throws -> sending Result
    ) async throws -> sending Result {
        if let replica, await !replica.serves() {
            return try await replica.primary.withTransaction(isolation: isolation, body)
        }
        inUse.increment()
        defer { inUse.decrement() }
        return try await client.withConnection(isolation: isolation) { pooled in
            let connection = LeasedConnection(underlying: pooled, watch: watch)
            try await connection.query("BEGIN", logger: logger)
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
