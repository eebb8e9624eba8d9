import Logging
import PostgresNIO
import ServiceLifecycle

/// Listens on a PostgreSQL channel (`data4help_events` for the webhook outbox and streams,
/// `data4help_sos` for new incidents) and bumps a `ChangeSignal` for every notification. Runs as a service; holds one pooled connection while it runs and reconnects
/// (after a second) when that connection fails. After every (re)connection it bumps the signal
/// once, so waiters re-read whatever they may have missed.
package struct EventListener: Service {
    package static let channel = "data4help_events"
    package static let sosChannel = "data4help_sos"

    let database: Database
    let channel: String
    let signal: ChangeSignal
    let logger: Logger

    package init(database: Database, channel: String = EventListener.channel, signal: ChangeSignal, logger: Logger) {
        self.database = database
        self.channel = channel
        self.signal = signal
        self.logger = logger
    }

    package func run() async throws {
        try await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await database.client.withConnection { connection in
                        try await connection.listen(on: channel) { notifications in
                            signal.notify()
                            for try await _ in notifications { signal.notify() }
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
