import DatabaseLink
import DatabaseTestSupport
import Foundation
import HTTPAPI
import HTTPTypes
import PostgresNIO
import Testing

@Suite("data4help audit verify: one command tells an operator whether the audit log was edited")
struct AuditCommandTests {
    /// Runs `data4help audit verify`, its output to a file: reading a pipe to its end and
    /// `waitUntilExit` would hold a cooperative thread that the suite's servers need (see
    /// `Process.exited()`).
    func verify(_ database: DatabaseURL) async throws -> (status: Int32, output: String) {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("audit-verify-\(UUID().uuidString).txt")
        FileManager.default.createFile(atPath: output.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: output) }
        let process = Process()
        process.executableURL = ServerProcess.executable
        process.arguments = ["audit", "verify"]
        process.environment = [
            "DATABASE_URL": ServerProcess.connectionString(database), "LOG_LEVEL": "error",
            "MIGRATIONS_DIR": TestPostgres.migrationsDirectory.path,
            "PAGES_DIR": TestPostgres.repositoryRoot.appendingPathComponent("Sources/HTTPAPI/Pages/Templates").path,
        ]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: output)
        try process.run()
        await process.exited()
        return (process.terminationStatus, try String(contentsOf: output, encoding: .utf8))
    }

    @Test func intactThenBrokenAtTheEditedRow() async throws {
        let database = try await TestPostgres.shared.migratedDatabase()
        try await TestServer.run(database: database, configure: { $0.aggregateMinimumGroup = 5 }) { api in
            let (party, _) = try await api.thirdPartySession()
            for epsilon in [0.1, 0.2, 0.3] {
                let reply = try await api.send(
                    .post, "/api/thirdparties/aggregates", token: party,
                    json: [
                        "type": "heartRate", "statistic": "count", "from": "2026-01-01", "to": "2026-01-31", "epsilon": epsilon,
                    ])
                #expect(reply.status == .created, "\(String(decoding: reply.data, as: UTF8.self))")
            }
        }
        let intact = try await verify(database)
        #expect(intact.status == 0 && intact.output.contains("intact: 3 rows"))

        let direct = Database(configuration: database.clientConfiguration(maximumConnections: 1), logger: TestPostgres.logger)
        try await direct.whileRunning {
            try await direct.query("ALTER TABLE aggregate_audit DISABLE TRIGGER aggregate_audit_append_only")
            try await direct.query("UPDATE aggregate_audit SET epsilon_hundredths = 99 WHERE id = 2")
        }
        let broken = try await verify(database)
        #expect(broken.status == 1 && broken.output.contains("BROKEN at row 2"))
    }
}
