import Logging
import PostgresNIO
import Synchronization
import Tracing

/// A pooled connection as the stores' closures get it from `Database.withConnection` and
/// `withTransaction`: it runs statements like `PostgresConnection`, except that a statement
/// fails with `ConnectionLost` as soon as the connection closes.
///
/// Why: postgres-nio 1.33.2 hands a statement to its channel without a promise for the write, so
/// a statement written just after the server closed the connection is dropped by the closed
/// channel and its result never comes. PostgreSQL's shutdown ends every backend (57P01); the
/// ROLLBACK that follows the failed statement, or a transaction's next statement, then waited
/// forever — and with it the request, the connection's lease and the server's own shutdown
/// (found by the PostgreSQL restart drill, `make drills`). So each statement is awaited in a task
/// of its own, raced against the connection's closing; when the connection closes first, that
/// task is abandoned (it holds only the closed connection) and the caller gets the error.
package struct LeasedConnection: Sendable {
    /// The postgres-nio connection, for what this type does not cover (LISTEN, tests).
    package let underlying: PostgresConnection
    let watch: ConnectionWatch

    /// Like `PostgresConnection.query`; with tracing on, in a span per statement
    /// (`TraceSpans.statementName(of:)`) until its first answer.
    @discardableResult
    package func query(_ query: PostgresQuery, logger: Logger, file: String = #fileID, line: Int = #line) async throws -> PostgresRowSequence {
        guard TraceSpans.isOn else { return try await run(query, logger: logger, file: file, line: line) }
        return try await withSpan(TraceSpans.statementName(of: query.sql), ofKind: .client) { span in
            span.attributes["db.system.name"] = "postgresql"
            span.attributes["code.file.path"] = file
            span.attributes["code.line.number"] = line
            return try await run(query, logger: logger, file: file, line: line)
        }
    }

    private func run(_ query: PostgresQuery, logger: Logger, file: String, line: Int) async throws -> PostgresRowSequence {
        try await watch.untilClosed(underlying) { [underlying] in
            try await underlying.query(query, logger: logger, file: file, line: line)
        }
    }

    /// Runs a prepared statement and collects its rows; with tracing on, in a span named after the
    /// statement's type (`SampleListingStatement<Newest>`).
    package func execute<Statement: PostgresPreparedStatement>(
        _ statement: Statement, logger: Logger
    ) async throws -> [Statement.Row] where Statement.Row: Sendable {
        guard TraceSpans.isOn else { return try await run(statement, logger: logger) }
        return try await withSpan(String(describing: Statement.self), ofKind: .client) { span in
            span.attributes["db.system.name"] = "postgresql"
            return try await run(statement, logger: logger)
        }
    }

    private func run<Statement: PostgresPreparedStatement>(
        _ statement: Statement, logger: Logger
    ) async throws -> [Statement.Row] where Statement.Row: Sendable {
        try await watch.untilClosed(underlying) { [underlying] in
            var rows: [Statement.Row] = []
            for try await row in try await underlying.execute(statement, logger: logger) { rows.append(row) }
            return rows
        }
    }

    /// True once the connection is closed (by either side).
    package var isClosed: Bool { underlying.isClosed }
}

/// What a statement throws when its connection closed before its result came: nothing after the
/// last acknowledged commit happened, and a retry on a new connection will do.
package struct ConnectionLost: Error {}

/// The statements awaiting a result, per connection; fails them all when their connection
/// closes. One close observer per connection (not per statement: a pooled connection lives for
/// millions of statements, and an observer cannot be removed from a future).
final class ConnectionWatch: Sendable {
    private struct Waiters {
        var next = 0
        var failing: [Int: @Sendable () -> Void] = [:]
    }

    private let waiting = Mutex<[ObjectIdentifier: Waiters]>([:])

    func untilClosed<Value: Sendable>(
        _ connection: PostgresConnection, _ statement: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            let resumed = Atomic<Bool>(false)
            let resume: @Sendable (Result<Value, any Error>) -> Void = { result in
                if !resumed.exchange(true, ordering: .acquiringAndReleasing) { continuation.resume(with: result) }
            }
            let key = ObjectIdentifier(connection)
            let (token, firstOnConnection) = waiting.withLock { waiting in
                let first = waiting[key] == nil
                var entry = waiting[key] ?? Waiters()
                let token = entry.next
                entry.next += 1
                entry.failing[token] = { resume(.failure(ConnectionLost())) }
                waiting[key] = entry
                return (token, first)
            }
            if firstOnConnection {
                // Runs at once when the connection is already closed.
                connection.closeFuture.whenComplete { [self] _ in
                    let failing = waiting.withLock { $0.removeValue(forKey: key)?.failing.values.map { $0 } ?? [] }
                    for fail in failing { fail() }
                }
            }
            Task {
                let result = await Result(catching: { try await statement() })
                waiting.withLock { _ = $0[key]?.failing.removeValue(forKey: token) }
                resume(result)
            }
        }
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
