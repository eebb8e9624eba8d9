import DatabaseLink
import Foundation
import Logging
import PostgresNIO

/// One real PostgreSQL cluster per test process, and a fresh database for every test.
///
/// The cluster is the same embedded one `data4help serve` uses (run as the `postgres` user when
/// the tests run as root), started in a temporary directory without fsync and stopped when the
/// process exits. Migrations are applied once to a template database; each test then gets
/// `CREATE DATABASE test_n TEMPLATE template_migrated`, a file copy that takes milliseconds —
/// the pattern of SwiftPackageIndex-Server's test suite — so tests run in parallel in isolation.
package actor TestPostgres {
    package static let shared = TestPostgres()

    /// Where the repository's `migrations/` and `openapi/` are, whatever the working directory.
    package static let repositoryRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    package static var migrationsDirectory: URL { repositoryRoot.appendingPathComponent("migrations") }

    package static let logger: Logger = {
        var logger = Logger(label: "data4help.tests")
        logger.logLevel = .warning
        return logger
    }()

    // Tasks, not values: the actor is re-entrant at every await, and parallel tests must
    // share one cluster and one template rather than race to create their own.
    private var cluster: Task<EmbeddedPostgres, any Error>?
    private var template: Task<Void, any Error>?
    private var databaseCount = 0

    /// A new database with every migration applied.
    package func migratedDatabase() async throws -> DatabaseURL {
        if template == nil {
            template = Task {
                let cluster = try await self.startedCluster()
                let url = try await cluster.database(named: "template_migrated", logger: Self.logger)
                let database = Database(configuration: url.clientConfiguration(maximumConnections: 2), logger: Self.logger)
                try await database.whileRunning {
                    try await Migrator(database: database, migrations: MigrationSet(directory: Self.migrationsDirectory)).migrate()
                }
                // The migrator's pool has closed its sockets, but its server processes leave in
                // their own time; CREATE DATABASE … TEMPLATE refuses a template anyone is connected
                // to after waiting 5 s ("being accessed by other users"). With a clean-clone
                // `make test` on the machine, the first wave of tests all failed that way: wait
                // until the server says nobody is connected.
                try await Self.waitUntilUnused("template_migrated", on: cluster)
            }
        }
        try await template!.value
        return try await createDatabase(template: "template_migrated")
    }

    /// A new, empty database (for testing the migrator itself).
    package func emptyDatabase() async throws -> DatabaseURL {
        try await createDatabase(template: "template0")
    }

    private func createDatabase(template: String) async throws -> DatabaseURL {
        let cluster = try await startedCluster()
        databaseCount += 1
        let name = "test_\(databaseCount)"
        let url = cluster.maintenanceURL
        let connection: PostgresConnection
        do {
            var configuration = PostgresConnection.Configuration(
                host: url.host, port: url.port, username: url.username, password: url.password, database: url.database, tls: .disable)
            // postgres-nio's default of 10 s was too short once: a clean-clone `make test` with
            // every suite starting at once saw "Connect timeout (10 s)" creating a database.
            configuration.options.connectTimeout = .seconds(60)
            connection = try await PostgresConnection.connect(configuration: configuration, id: databaseCount, logger: Self.logger)
        } catch {
            throw CreateDatabaseFailed(description: "connecting to create \(name): \(String(reflecting: error))")
        }
        do {
            // Names are generated above, never user input; identifiers cannot be bound.
            _ = try await connection.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name) TEMPLATE \(template)"), logger: Self.logger)
            try await connection.close()
        } catch {
            try? await connection.close()
            // The SQLSTATE and message, which PSQLError's description hides (nothing secret here).
            throw CreateDatabaseFailed(description: "CREATE DATABASE \(name) TEMPLATE \(template): \(String(reflecting: error))")
        }
        return url.with(database: name)
    }

    /// Returns once no session is connected to `database` (`pg_stat_activity`), or throws after a minute.
    private static func waitUntilUnused(_ database: String, on cluster: EmbeddedPostgres) async throws {
        let url = cluster.maintenanceURL
        let connection = try await PostgresConnection.connect(
            configuration: .init(
                host: url.host, port: url.port, username: url.username, password: url.password, database: url.database, tls: .disable),
            id: 0, logger: Self.logger
        )
        defer { Task { try? await connection.close() } }
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            let rows = try await connection.query("SELECT count(*)::int8 FROM pg_stat_activity WHERE datname = \(database)", logger: Self.logger)
            var sessions: Int64 = 0
            for try await count in rows.decode(Int64.self) { sessions = count }
            if sessions == 0 { return }
            guard ContinuousClock.now < deadline else { throw TemplateInUse(database: database, sessions: sessions) }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    struct CreateDatabaseFailed: Error, CustomStringConvertible {
        let description: String
    }

    struct TemplateInUse: Error, CustomStringConvertible {
        let database: String
        let sessions: Int64
        var description: String { "\(sessions) sessions still connected to \(database) a minute after its migration" }
    }

    private func startedCluster() async throws -> EmbeddedPostgres {
        if cluster == nil {
            cluster = Task { try await Self.startCluster() }
        }
        return try await cluster!.value
    }

    private static func startCluster() async throws -> EmbeddedPostgres {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory())
            .appendingPathComponent("data4help-tests-\(ProcessInfo.processInfo.processIdentifier)")
        try? FileManager.default.removeItem(at: directory)
        var options = EmbeddedPostgres.Options(directory: directory)
        options.durable = false
        // Swift Testing runs every test at once: well over a hundred in-process servers, each
        // with a pool of 4 (three held by its LISTEN connections from the start). At 500 the
        // cluster refused connections ("too many clients") while servers held three and waited
        // for a fourth to finish starting: the suite hung in some runs.
        options.settings = ["max_connections": "2000", "shared_buffers": "64MB"]
        let started = try await EmbeddedPostgres.start(options, logger: Self.logger)
        ClusterCleanup.register(started, directory: directory)
        return started
    }
}

/// Stops the test cluster and deletes its directory when the test process exits.
private enum ClusterCleanup {
    nonisolated(unsafe) static var cluster: EmbeddedPostgres?
    nonisolated(unsafe) static var directory: URL?

    static func register(_ cluster: EmbeddedPostgres, directory: URL) {
        Self.cluster = cluster
        Self.directory = directory
        atexit {
            ClusterCleanup.cluster?.stopImmediatelyBlocking()
            if let directory = ClusterCleanup.directory { try? FileManager.default.removeItem(at: directory) }
        }
    }
}
