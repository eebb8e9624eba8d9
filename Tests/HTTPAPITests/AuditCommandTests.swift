import DatabaseLink
import DatabaseTestSupport
import ExternalPrograms
import Foundation
import HTTPAPI
import HTTPTypes
import PostgresNIO
import Testing

@Suite("data4help audit verify: one command tells an operator whether the audit log was edited")
struct AuditCommandTests {
    /// Runs `data4help audit verify`, its output to a file.
    func verify(_ database: DatabaseURL) async throws -> (status: ChildProcess.Termination?, output: String) {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("audit-verify-\(UUID().uuidString).txt")
        defer { try? FileManager.default.removeItem(at: output) }
        let process = try await ServerProcess.launch(["audit", "verify"], database: database, environment: [:], output: output)
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
        #expect(intact.status == .exited(0) && intact.output.contains("intact: 3 rows"))

        let direct = Database(configuration: database.clientConfiguration(maximumConnections: 1), logger: TestPostgres.logger)
        try await direct.whileRunning {
            try await direct.query("ALTER TABLE aggregate_audit DISABLE TRIGGER aggregate_audit_append_only")
            try await direct.query("UPDATE aggregate_audit SET epsilon_hundredths = 99 WHERE id = 2")
        }
        let broken = try await verify(database)
        #expect(broken.status == .exited(1) && broken.output.contains("BROKEN at row 2"))
    }
}
