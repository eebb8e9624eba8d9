import Data4HelpCore
import Logging
import PostgresNIO
import ServiceLifecycle

/// Listens on PostgreSQL channels (`data4help_events` for the webhook outbox and streams,
/// `data4help_sos` for new incidents, `data4help_runs` for live run updates,
/// `data4help_aggregates` for aggregate queries that ended) and hands every
/// notification's payload to its channel's handler (or bumps a `ChangeSignal`).
///
/// Runs as a service and holds **one** pooled connection for all its channels (a `LISTEN` per
/// channel on the same connection): a connection held for listening is one fewer for requests,
/// and three held ones left a small pool one connection to serve everything else. When the
/// connection fails it reconnects after a second; after every (re)connection each handler is
/// called with nil once, so waiters re-read whatever they may have missed.
package struct EventListener: Service {
    package static let channel = "data4help_events"
    package static let sosChannel = "data4help_sos"

    /// What to do with a channel's notifications.
    package typealias Handler = @Sendable (String?) -> Void

    let database: Database
    let handlers: [String: Handler]
    /// Called when the connection is lost: until the next (re)connection nothing is heard.
    let lost: @Sendable () -> Void
    let logger: Logger

    /// Hands every payload on each channel to its handler (nil after a reconnection).
    package init(database: Database, handlers: [String: Handler], lost: @escaping @Sendable () -> Void = {}, logger: Logger) {
        self.database = database
        self.handlers = handlers
        self.lost = lost
        self.logger = logger
    }

    /// A handler that bumps `signal` for every notification (and after every reconnection).
    package static func notifying(_ signal: ChangeSignal) -> Handler {
        { _ in signal.notify() }
    }

    package func run() async throws {
        await database.started()
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await database.client.withConnection { connection in
                        try await withThrowingTaskGroup(of: Void.self) { group in
                            for (channel, handle) in handlers {
                                group.addTask {
                                    try await connection.listen(on: channel) { notifications in
                                        handle(nil)
                                        for try await notification in notifications { handle(notification.payload) }
                                    }
                                }
                            }
                            // One channel's stream ending means the connection did: listen anew on another.
                            try await group.next()
                            group.cancelAll()
                        }
                    }
                    lost()
                } catch is CancellationError {
                    lost()
                    return
                } catch {
                    lost()
                    if Task.isCancelled { return }
                    logger.warning(
                        "event listener lost its connection; reconnecting",
                        metadata: [
                            "channels": "\(handlers.keys.sorted().joined(separator: ","))", "error": "\(String(reflecting: type(of: error)))",
                        ])
                    try? await Task.sleep(for: .seconds(1))
                }
            }
        }
    }
}
