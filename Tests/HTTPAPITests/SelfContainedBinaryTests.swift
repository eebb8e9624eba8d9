import AsyncHTTPClient
import DatabaseLink
import DatabaseTestSupport
import ExternalPrograms
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import PostgresNIO
import Testing

/// The executable alone, copied to an empty directory and started there with no `*_DIR` or
/// `*_PATH` setting: the migrations, the contract and the page templates come from inside it
/// (the `EmbedFiles` build plugin), and a clean start logs no warning and no error.
@Suite("The executable runs from anywhere, quietly")
struct SelfContainedBinaryTests {
    @Test(.timeLimit(.minutes(20)))
    func servesFromAnEmptyDirectoryWithNothingBesideIt() async throws {
        #expect(FileManager.default.isExecutableFile(atPath: ServerProcess.executable.path), "build the executable first (swift build)")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("data4help-alone-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let copy = directory.appendingPathComponent("data4help")
        try FileManager.default.copyItem(at: ServerProcess.executable, to: copy)

        let database = try await TestPostgres.shared.emptyDatabase()
        let reservation = try LoopbackPortReservation.forImmediateBind()
        let log = directory.appendingPathComponent("serve.log")
        // Both outputs to one file, each appended: a crash report on standard error must not
        // overwrite the log lines that said what the process was doing.
        let process = try await ChildProcess.start(
            copy, ["serve"],
            environment: [
                "DATABASE_URL": ServerProcess.connectionString(database), "HOST": "127.0.0.1", "PORT": String(reservation.port),
                "LOG_LEVEL": "info", "MAIL_PICKUP_DIR": Mailbox.directory.path, "PATH": "/usr/bin:/bin",
            ],
            workingDirectory: directory, output: log, error: log)
        defer { process.terminate() }
        try await BalancedPairTests.waitReady(reservation.port)

        let base = "http://127.0.0.1:\(reservation.port)"
        let contract = try await HTTPClient.shared.execute(HTTPClientRequest(url: base + "/openapi.yaml"), timeout: .seconds(10))
        #expect(contract.status == .ok)
        let served = try await contract.body.collect(upTo: 4 << 20)
        let file = try Data(contentsOf: TestPostgres.repositoryRoot.appendingPathComponent("openapi/data4help.yaml"))
        #expect(Data(buffer: served) == file, "the compiled-in contract is the repository's")
        let login = try await HTTPClient.shared.execute(HTTPClientRequest(url: base + "/me/login"), timeout: .seconds(10))
        #expect(login.status == .ok && login.headers.first(name: "content-type")?.hasPrefix("text/html") == true)
        let page = String(buffer: try await login.body.collect(upTo: 1 << 20))
        #expect(page.contains("<form"))
        // Every migration ran: the compiled-in set is the repository's.
        let migrations = try FileManager.default.contentsOfDirectory(atPath: TestPostgres.migrationsDirectory.path).filter { $0.hasSuffix(".sql") }
        let direct = Database(configuration: database.clientConfiguration(maximumConnections: 1), logger: TestPostgres.logger)
        let applied = try await direct.whileRunning {
            try await direct.query("SELECT count(*) FROM schema_migrations")[0].decode(Int64.self)
        }
        #expect(applied == Int64(migrations.count))

        await process.stop()
        let output = try String(contentsOf: log, encoding: .utf8)
        let lines = output.split(separator: "\n")
        // JSON lines when the output is not a terminal (`"level":"info"`), text on one.
        let levels = ["warning", "error", "critical"]
        let loud = lines.filter { line in levels.contains { line.contains("\"level\":\"\($0)\"") || line.contains(" \($0) ") }
        }
        #expect(loud.isEmpty, "\(loud)\nthe log's last lines:\n\(lines.suffix(20).joined(separator: "\n"))")
        #expect(output.contains("\"message\":\"applied migration\""), "the log is read: \(output.prefix(300))")
    }
}
