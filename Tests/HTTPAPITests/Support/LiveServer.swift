import DatabaseLink
import Foundation
import HTTPAPI
import Hummingbird
import HummingbirdCore
import HummingbirdTesting
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import Testing

/// Runs an application on a free port, as HummingbirdTesting's `.live` setup does, with a test
/// client whose read limit the test chooses.
///
/// Why not `app.test(.live)`: its client gives up after a fixed 20 s, below the server's own
/// `REQUEST_TIMEOUT_SECONDS` (30 s), after which the server answers 503 itself. On a machine
/// running the whole suite beside a build, a correct answer that took 21 s (a seeded aggregate
/// query) failed as `.readTimeout`. With the client's limit above the server's, the server's own
/// promise is what is tested: every request is answered — by its result or by a 503.
enum LiveServer {
    static func run<Base: ApplicationProtocol>(
        _ base: Base, clientTimeout: Duration, shutdownLimit: Duration = LiveServer.shutdownLimit,
        diagnostics: @escaping @Sendable () -> [String] = { [] },
        _ body: @Sendable (LiveClient) async throws -> Void
    ) async throws {
        let app = PortReportingApplication(base: base)
        let serviceGroup = ServiceGroup(configuration: .init(services: [app], logger: app.logger))
        // Not a child task: a server that never stops must not keep the test from ending (see
        // `waitForShutdown`).
        let server = Task {
            defer { app.port.fulfil(nil) }  // a server that ended before listening wakes the waiter
            try await serviceGroup.run()
        }
        guard let port = await app.port.value() else {
            try await server.value  // the server did not start: its error ends the test
            return
        }
        let client = LiveClient(port: port, timeout: clientTimeout)
        do {
            try await body(client)
            try await client.shutdown()
            await serviceGroup.triggerGracefulShutdown()
        } catch {
            try? await client.shutdown()
            await serviceGroup.triggerGracefulShutdown()
            _ = await waitForShutdown(of: app, server, limit: shutdownLimit, diagnostics: diagnostics)
            throw error
        }
        try await waitForShutdown(of: app, server, limit: shutdownLimit, diagnostics: diagnostics)?.get()
    }

    /// How long a server may take to stop once asked: its workers stop at their next await, its
    /// pools close their connections.
    /// `DATA4HELP_TEST_SHUTDOWN_LIMIT` (seconds) shortens it for a loop that hunts a hang.
    static let shutdownLimit = Duration.seconds(
        ProcessInfo.processInfo.environment["DATA4HELP_TEST_SHUTDOWN_LIMIT"].flatMap(Int.init) ?? 120)

    /// Waits for the server's services to end. One whole-suite run on a busy machine hung for 20
    /// minutes with eleven tests unfinished, nine of them with no socket left open (issue 18): a
    /// service that never returns from a graceful shutdown hangs the suite without a word. Past
    /// `limit` this records an issue naming the services still running, cancels the server and
    /// returns without it (a service that ignores cancellation too is left behind, not awaited),
    /// so the test fails by name and the suite goes on. `diagnostics` adds what the caller knows
    /// (the pool's connections). Nil when it timed out.
    @discardableResult
    private static func waitForShutdown<Base>(
        of app: PortReportingApplication<Base>, _ server: Task<Void, any Error>, limit: Duration, diagnostics: @Sendable () -> [String]
    ) async -> Result<Void, any Error>? {
        // `withTimeout` answers at the limit without waiting for the server; nil when it passed.
        let outcome = try? await withTimeout(limit) { await server.result }
        if outcome == nil {
            let lines = ["the test's server did not stop within \(limit) of being asked; still running: \(app.roster.stillRunning)"] + diagnostics()
            Issue.record(Comment(rawValue: lines.joined(separator: "\n")))
            server.cancel()
        }
        return outcome
    }

}

/// The test client of a live server, and the server's port (for WebSocket clients, browsers).
///
/// Keeps one connection, as HummingbirdTesting's client does, and connects again when the
/// server has closed it: the server closes a kept-alive connection after `HTTP_IDLE_TIMEOUT_SECONDS`
/// (75 s), and a browser test on a loaded machine went that long between two API requests,
/// then failed with "I/O on closed channel". A write to a closed channel sent nothing, so the
/// request is sent once more on the new connection, as any HTTP client would.
final class LiveClient: Sendable {
    let port: Int?
    private let timeout: Duration
    private let current: Mutex<TestClient>

    init(port: Int, timeout: Duration) {
        self.port = port
        self.timeout = timeout
        let client = TestClient(host: "127.0.0.1", port: port, configuration: .init(timeout: timeout))
        client.connect()
        self.current = Mutex(client)
    }

    func execute(uri: String, method: HTTPRequest.Method, headers: HTTPFields, body: ByteBuffer?) async throws -> TestClient.Response {
        var headers = headers
        headers[.connection] = "keep-alive"
        let request = TestClient.Request(uri, method: method, authority: "localhost", headers: headers, body: body)
        let client = current.withLock { $0 }
        do {
            return try await client.execute(request)
        } catch ChannelError.ioOnClosedChannel {
            let fresh = TestClient(host: "127.0.0.1", port: port ?? 0, configuration: .init(timeout: timeout))
            fresh.connect()
            current.withLock { $0 = fresh }
            try? await client.shutdown()
            return try await fresh.execute(request)
        }
    }

    func shutdown() async throws {
        try await current.withLock { $0 }.shutdown()
    }
}

/// The application, telling its bound port once the server runs (HummingbirdTesting's
/// `TestApplication` does the same, but is internal).
struct PortReportingApplication<Base: ApplicationProtocol>: ApplicationProtocol, Service {
    typealias Responder = Base.Responder
    let base: Base
    let port = PortPromise()

    var responder: Responder { get async throws { try await base.responder } }
    var server: HTTPServerBuilder { base.server }
    var eventLoopGroup: any EventLoopGroup { base.eventLoopGroup }
    var configuration: ApplicationConfiguration { base.configuration }
    var logger: Logger { base.logger }
    var services: [any Service] { base.services.map { roster.watching($0) } }
    /// The application's services that have started and not yet returned.
    let roster = ServiceRoster()
    var processesRunBeforeServerStart: [@Sendable () async throws -> Void] { base.processesRunBeforeServerStart }

    @Sendable func onServerRunning(_ channel: any Channel) async {
        await base.onServerRunning(channel)
        port.fulfil(channel.localAddress?.port)
    }
}

/// The port, once known (nil when the server failed before listening).
final class PortPromise: Sendable {
    private let state = Mutex<(value: Int??, waiters: [CheckedContinuation<Int?, Never>])>((nil, []))

    func fulfil(_ port: Int?) {
        let waiters = state.withLock { state -> [CheckedContinuation<Int?, Never>] in
            guard state.value == nil else { return [] }
            state.value = .some(port)
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: port) }
    }

    func value() async -> Int? {
        await withCheckedContinuation { continuation in
            let known = state.withLock { state -> Int?? in
                if let value = state.value { return value }
                state.waiters.append(continuation)
                return nil
            }
            if let known { continuation.resume(returning: known) }
        }
    }
}
