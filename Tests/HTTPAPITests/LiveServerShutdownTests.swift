import Hummingbird
import HummingbirdTesting
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
}
