import Logging
import PostgresNIO
import ServiceLifecycle

/// Listens on a PostgreSQL channel (`data4help_events` for the webhook outbox and streams,
/// `data4help_sos` for new incidents, `data4help_runs` for live run updates) and hands every
/// notification's payload to `handle` (or bumps a `ChangeSignal`). Runs as a service; holds one pooled connection while it runs and reconnects
/// (after a second) when that connection fails. After every (re)connection it calls `handle`
/// with nil once, so waiters re-read whatever they may have missed.
package struct EventListener: Service {
    package static let channel = "data4help_events"
    package static let sosChannel = "data4help_sos"

    let database: Database
    let channel: String
    let handle: @Sendable (String?) -> Void
    let logger: Logger

    /// Bumps `signal` for every notification (and after every reconnection).
    package init(database: Database, channel: String = EventListener.channel, signal: ChangeSignal, logger: Logger) {
        self.init(database: database, channel: channel, logger: logger) { _ in signal.notify() }
    }

    /// Hands every payload to `handle` (nil after a reconnection: something may have been missed).
    package init(database: Database, channel: String, logger: Logger, handle: @escaping @Sendable (String?) -> Void) {
        self.database = database
        self.channel = channel
        self.handle = handle
        self.logger = logger
    }

    package func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await database.client.withConnection { connection in
                        try await connection.listen(on: channel) { notifications in
                            handle(nil)
                            for try await notification in notifications { handle(notification.payload) }
                        }
                    }
                } catch is CancellationError {
                    return
                } catch {
                    if Task.isCancelled { return }
                    logger.warning("event listener lost its connection; reconnecting", metadata: ["channel": "\(channel)", "error": "\(String(reflecting: type(of: error)))"])
                    try? await Task.sleep(for: .seconds(1))
                }
            }
        }
    }
}
