import DatabaseTestSupport
import Logging
import ServiceLifecycle
import Testing

/// A test's own HTTP server (a webhook receiver, the dispatch centre) running until `cancel()`,
/// which shuts it down **gracefully**.
///
/// Cancelling the serving task instead can trap in a debug build: a connection accepted at that
/// moment is dropped before it is served, and NIO's writer asserts ("Deinited NIOAsyncWriter
/// without calling finish()", apple/swift-nio#3481; NIO's advice is a graceful shutdown). Seen
/// here once, under load, ending the whole test process while a server under test kept
/// retrying its calls to a centre that was being stopped.
final class LocalServer: Sendable {
    private let group: ServiceGroup

    init(_ service: some Service) {
        group = ServiceGroup(configuration: .init(services: [service], logger: TestPostgres.logger))
        // A server that cannot start (its port taken) is an issue of the test that started it,
        // with its error, not only a wait for its calls that runs out minutes later.
        Task { [group] in
            do { try await group.run() } catch {
                TestPostgres.logger.error("a test's local server stopped: \(error)")
                Issue.record(error, "a test's local server stopped")
            }
        }
    }

    func cancel() {
        Task { [group] in await group.triggerGracefulShutdown() }
    }
}
