import Foundation
import Logging
import Synchronization

/// What a test server's connection pool did with each connection, as the pool itself tells
/// it: PostgresNIO's `PostgresClient` reports a connection's life ("Creating new connection",
/// "Connection creation failed", "run ping pong", "Close connection", "Connection closed") at
/// debug level on its background logger, with the connection's id. When a server's pool does not stop (issue 18), the watchdog of
/// `LiveServer` prints the connections whose last word was not "closed", so the next hang names
/// the state it hangs in instead of only the service.
final class PoolEvents: Sendable {
    private let started = ContinuousClock.now
    private let state = Mutex<[String: [(Duration, String)]]>([:])

    /// A logger for the application: messages at `base`'s level or above go to standard error
    /// as before; the pool's connection events, at any level, are kept here.
    func logger(label: String, level: Logger.Level) -> Logger {
        var logger = Logger(label: label) { [self] label in
            var forwarded = StreamLogHandler.standardError(label: label)
            forwarded.logLevel = level
            return RecordingHandler(forwarded: forwarded, events: self)
        }
        logger.logLevel = .debug
        return logger
    }

    fileprivate func record(connection: String, event: String) {
        let at = started.duration(to: .now)
        state.withLock { $0[connection, default: []].append((at, event)) }
    }

    private static func seconds(_ duration: Duration) -> String {
        String(format: "%.2f s", Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
    }

    /// One line per connection the pool has not reported closed, with its history.
    var unclosed: [String] {
        state.withLock { connections in
            connections.filter { $0.value.last?.1 != "Connection closed" }.sorted { $0.key < $1.key }.map { id, events in
                "connection \(id): " + events.suffix(8).map { "\($0.1) at +\(Self.seconds($0.0))" }.joined(separator: ", ")
            }
        }
    }
}

/// Keeps the pool's connection events and forwards everything else at the forwarded level.
private struct RecordingHandler: LogHandler {
    var forwarded: StreamLogHandler
    let events: PoolEvents
    var logLevel: Logger.Level = .debug
    var metadata: Logger.Metadata {
        get { forwarded.metadata }
        set { forwarded.metadata = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { forwarded[metadataKey: key] }
        set { forwarded[metadataKey: key] = newValue }
    }

    func log(
        level: Logger.Level, message: Logger.Message, metadata explicit: Logger.Metadata?, source: String, file: String, function: String,
        line: UInt
    ) {
        if let connection = explicit?["psql_connection_id"] {
            events.record(connection: "\(connection)", event: message.description)
        }
        if level >= forwarded.logLevel {
            forwarded.log(level: level, message: message, metadata: explicit, source: source, file: file, function: function, line: line)
        }
    }
}
