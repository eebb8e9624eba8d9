import DatabaseLink
import DatabaseTestSupport
import Hummingbird
import HummingbirdTesting
import Logging
import PostgresNIO
import ServiceLifecycle
import Testing

@Suite("The test harness: a server that does not stop fails its test by name")
struct LiveServerShutdownTests {
    /// Ignores graceful shutdown; ends only when cancelled.
    struct Stubborn: Service {
        func run() async throws {
            try await Task.sleep(for: .seconds(3_600))
        }
    }

    @Test(.timeLimit(.minutes(1))) func aServiceThatIgnoresShutdownIsNamedAndCancelled() async throws {
        var router = Router()
        router.get("ping") { _, _ in "pong" }
        var app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        app.addServices(Stubborn())
        let started = ContinuousClock.now
        try await withKnownIssue {
            try await LiveServer.run(app, clientTimeout: .seconds(10), shutdownLimit: .seconds(1)) { client in
                let reply = try await client.execute(uri: "/ping", method: .get, headers: [:], body: nil)
                #expect(reply.status == .ok)
            }
        } matching: { issue in
            issue.comments.contains { $0.rawValue.contains("Stubborn") } || "\(issue)".contains("Stubborn")
        }
        #expect(ContinuousClock.now - started < .seconds(60))
    }

    /// The pool tells its connections' lives to the recorder the watchdog prints: one connection
    /// is open while the pool runs and closed after. (PostgresNIO 1.33 reports creating,
    /// closing and closed; not established, leased or released.)
    @Test func thePoolsConnectionsAreRecordedUntilClosed() async throws {
        let events = PoolEvents()
        let url = try await TestPostgres.shared.migratedDatabase()
        let database = Database(
            configuration: url.clientConfiguration(maximumConnections: 1), logger: events.logger(label: "pool-events", level: .warning))
        let during = try await database.whileRunning {
            try await database.withConnection { connection in _ = try await connection.query("SELECT 1", logger: database.logger) }
            return events.unclosed
        }
        #expect(during.count == 1)
        #expect(during.first?.contains("Creating new connection") == true)
        let deadline = ContinuousClock.now + .seconds(30)
        while !events.unclosed.isEmpty, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(events.unclosed.isEmpty)
    }
}
