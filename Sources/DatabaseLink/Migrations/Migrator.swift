import Logging
import PostgresNIO

/// Applies `migrations/*.sql` in version order, each in its own transaction, and records
/// each one with its checksum in `schema_migrations`.
///
/// A session-level advisory lock serialises concurrent migrators, so two instances starting
/// together apply each file once: the second waits, then finds nothing left to do.
package struct Migrator: Sendable {
    /// Advisory lock key: "D4hMigr" in ASCII, so that it is recognisable in `pg_locks`.
    static let advisoryLockKey: Int64 = 0x0044_3468_4D69_6772

    package let database: Database
    package let migrations: MigrationSet

    package init(database: Database, migrations: MigrationSet) {
        self.database = database
        self.migrations = migrations
    }

    /// What one run did.
    package struct Report: Sendable, Equatable {
        /// File names applied by this run, in order.
        package var applied: [String]
        /// How many files were already applied before it.
        package var alreadyApplied: Int
    }

    /// Brings the schema up to date. Throws `MigrationError` on an edited or missing file or a failing one.
    @discardableResult
    package func migrate() async throws -> Report {
        let logger = database.logger
        return try await database.withConnection { connection in
            _ = try await connection.query("SELECT pg_advisory_lock(\(Self.advisoryLockKey))", logger: logger)
            do {
                let report = try await applyPending(on: connection, logger: logger)
                _ = try await connection.query("SELECT pg_advisory_unlock(\(Self.advisoryLockKey))", logger: logger)
                return report
            } catch {
                _ = try? await connection.query("SELECT pg_advisory_unlock(\(Self.advisoryLockKey))", logger: logger)
                throw error
            }
        }
    }

    /// How many migration files are not applied yet; 0 when the schema is current.
    package func pendingCount() async throws -> Int {
        let rows = try await database.query(
            """
            SELECT version FROM schema_migrations
            """)
        let applied = Set(try rows.map { try $0.decode(Int.self) })
        return migrations.files.filter { !applied.contains($0.version) }.count
    }

    private func applyPending(on connection: LeasedConnection, logger: Logger) async throws -> Report {
        _ = try await connection.query(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version    integer     PRIMARY KEY,
                file_name  text        NOT NULL,
                checksum   text        NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """, logger: logger)
        var applied: [Int: (fileName: String, checksum: String)] = [:]
        let rows = try await connection.query("SELECT version, file_name, checksum FROM schema_migrations", logger: logger)
        for try await (version, fileName, checksum) in rows.decode((Int, String, String).self) {
            applied[version] = (fileName, checksum)
        }
        let files = Dictionary(uniqueKeysWithValues: migrations.files.map { ($0.version, $0) })
        for (version, record) in applied.sorted(by: { $0.key < $1.key }) {
            guard let file = files[version] else { throw MigrationError.missingFile(version: version, fileName: record.fileName) }
            guard file.checksum == record.checksum else { throw MigrationError.editedAfterApplying(fileName: file.fileName) }
        }
        var report = Report(applied: [], alreadyApplied: applied.count)
        for file in migrations.files where applied[file.version] == nil {
            try await apply(file, on: connection, logger: logger)
            logger.info("applied migration", metadata: ["migration": "\(file.fileName)"])
            report.applied.append(file.fileName)
        }
        return report
    }

    private func apply(_ file: MigrationFile, on connection: LeasedConnection, logger: Logger) async throws {
        _ = try await connection.query("BEGIN", logger: logger)
        do {
            // A file holds many statements, and postgres-nio speaks only the extended protocol
            // (one statement per query). PL/pgSQL's EXECUTE runs a multi-statement string through
            // SPI, inside this transaction, with the file's SQL as a bound parameter.
            _ = try await connection.query(
                """
                CREATE OR REPLACE FUNCTION pg_temp.data4help_run_migration(script text) RETURNS void
                LANGUAGE plpgsql AS $$ BEGIN EXECUTE script; END $$
                """, logger: logger)
            _ = try await connection.query("SELECT pg_temp.data4help_run_migration(\(file.sql))", logger: logger)
            _ = try await connection.query(
                """
                INSERT INTO schema_migrations (version, file_name, checksum)
                VALUES (\(file.version), \(file.fileName), \(file.checksum))
                """, logger: logger)
            _ = try await connection.query("COMMIT", logger: logger)
        } catch {
            _ = try? await connection.query("ROLLBACK", logger: logger)
            throw MigrationError.failed(fileName: file.fileName, reason: Self.reason(error))
        }
    }

    /// The server's message for a failed statement (it names the SQL problem, not bound values).
    private static func reason(_ error: any Error) -> String {
        if let psql = error as? PSQLError, let message = psql.serverInfo?[.message] {
            return message
        }
        return String(describing: type(of: error))
    }
}
