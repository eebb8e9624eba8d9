import DatabaseLink
import DatabaseTestSupport
import Foundation
import PostgresNIO
import Testing

@Suite("Migrator: plain-SQL migrations, in order, once, with checksums")
struct MigratorTests {
    private func withDatabase(_ body: @Sendable (Database) async throws -> Void) async throws {
        let url = try await TestPostgres.shared.emptyDatabase()
        let database = Database(configuration: url.clientConfiguration(maximumConnections: 4), logger: TestPostgres.logger)
        try await database.whileRunning { try await body(database) }
    }

    private static func file(_ name: String, _ sql: String) throws -> MigrationFile {
        try MigrationFile(fileName: name, contents: Data(sql.utf8))
    }

    @Test func freshDatabaseGetsEveryRepositoryMigration() async throws {
        try await withDatabase { database in
            let migrations = try MigrationSet(directory: TestPostgres.migrationsDirectory)
            let report = try await Migrator(database: database, migrations: migrations).migrate()
            #expect(report.applied == migrations.files.map(\.fileName))
            #expect(report.alreadyApplied == 0)
            let tables = try await database.query(
                "SELECT count(*) FROM pg_tables WHERE tablename IN ('individuals', 'third_parties', 'access_tokens', 'api_keys')")
            #expect(try tables[0].decode(Int.self) == 4)
            #expect(try await Migrator(database: database, migrations: migrations).pendingCount() == 0)
        }
    }

    @Test func rerunIsANoOp() async throws {
        try await withDatabase { database in
            let migrations = try MigrationSet(directory: TestPostgres.migrationsDirectory)
            try await Migrator(database: database, migrations: migrations).migrate()
            let second = try await Migrator(database: database, migrations: migrations).migrate()
            #expect(second.applied.isEmpty)
            #expect(second.alreadyApplied == migrations.files.count)
        }
    }

    @Test func editedAppliedFileIsRefused() async throws {
        try await withDatabase { database in
            let original = try MigrationSet(files: [Self.file("0001_first.sql", "CREATE TABLE first (id int);")])
            try await Migrator(database: database, migrations: original).migrate()
            let edited = try MigrationSet(files: [
                Self.file("0001_first.sql", "CREATE TABLE first (id bigint);"),
                Self.file("0002_second.sql", "CREATE TABLE second (id int);"),
            ])
            await #expect(throws: MigrationError.editedAfterApplying(fileName: "0001_first.sql")) {
                try await Migrator(database: database, migrations: edited).migrate()
            }
            // Nothing after the edited file was applied either.
            let second = try await database.query("SELECT to_regclass('second') IS NULL")
            #expect(try second[0].decode(Bool.self))
        }
    }

    @Test func appliedMigrationWithoutFileIsRefused() async throws {
        try await withDatabase { database in
            try await Migrator(
                database: database,
                migrations: MigrationSet(files: [
                    Self.file("0001_first.sql", "CREATE TABLE first (id int);")
                ])
            ).migrate()
            await #expect(throws: MigrationError.missingFile(version: 1, fileName: "0001_first.sql")) {
                try await Migrator(database: database, migrations: MigrationSet(files: [])).migrate()
            }
        }
    }

    @Test func failingFileLeavesNothingBehind() async throws {
        try await withDatabase { database in
            let migrations = try MigrationSet(files: [
                Self.file("0001_good.sql", "CREATE TABLE good (id int);"),
                Self.file("0002_bad.sql", "CREATE TABLE half (id int);\nINSERT INTO missing_table VALUES (1);"),
            ])
            await #expect(throws: MigrationError.self) {
                try await Migrator(database: database, migrations: migrations).migrate()
            }
            let state = try await database.query(
                """
                SELECT to_regclass('good') IS NOT NULL, to_regclass('half') IS NULL,
                       (SELECT array_agg(version ORDER BY version) FROM schema_migrations)
                """)
            let (good, noHalf, versions) = try state[0].decode((Bool, Bool, [Int]).self)
            #expect(good && noHalf)
            #expect(versions == [1])
        }
    }

    @Test func concurrentMigratorsApplyEachFileOnce() async throws {
        try await withDatabase { database in
            let migrations = try MigrationSet(files: [
                Self.file("0001_counter.sql", "CREATE TABLE runs (n int); INSERT INTO runs VALUES (1); SELECT pg_sleep(0.2);")
            ])
            let reports = try await withThrowingTaskGroup(of: Migrator.Report.self) { group in
                for _ in 0..<3 { group.addTask { try await Migrator(database: database, migrations: migrations).migrate() } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(reports.map(\.applied.count).sorted() == [0, 0, 1])
            let runs = try await database.query("SELECT count(*) FROM runs")
            #expect(try runs[0].decode(Int.self) == 1)
        }
    }

    @Test func fileNamesMustCarryAVersion() {
        #expect(throws: MigrationError.invalidFileName("accounts.sql")) { try Self.file("accounts.sql", "") }
        #expect(throws: MigrationError.duplicateVersion(1)) {
            try MigrationSet(files: [Self.file("0001_a.sql", ""), Self.file("0001_b.sql", "")])
        }
    }
}
