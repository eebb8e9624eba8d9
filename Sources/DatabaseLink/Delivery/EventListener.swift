import Logging
import PostgresNIO
import ServiceLifecycle

/// Listens on PostgreSQL's `data4help_events` channel and bumps a `ChangeSignal` for every
/// notification. Runs as a service; holds one pooled connection while it runs and reconnects
/// (after a second) when that connection fails. After every (re)connection it bumps the signal
/// once, so waiters re-read whatever they may have missed.
package struct EventListener: Service {
    package static let channel = "data4help_events"

    let database: Database
    let signal: ChangeSignal
    let logger: Logger

    package init(database: Database, signal: ChangeSignal, logger: Logger) {
        self.database = database
        self.signal = signal
        self.logger = logger
    }

    package func run() async throws {
        try await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await database.client.withConnection { connection in
                        try await connection.listen(on: Self.channel) { notifications in
                            signal.notify()
                            for try await _ in notifications { signal.notify() }
                        }
                    }
                } catch is CancellationError {
                    return
                } catch {
                    if Task.isCancelled { return }
                    logger.warning("event listener lost its connection; reconnecting", metadata: ["error": "\(String(reflecting: type(of: error)))"])
                    try? await Task.sleep(for: .seconds(1))
                }
            }
        }
    }
}
