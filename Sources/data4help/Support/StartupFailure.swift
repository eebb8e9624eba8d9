import ArgumentParser
import PostgresNIO

/// What a command prints when it cannot start: postgres-nio's errors describe themselves
/// generically on purpose, so the server's own message and SQLSTATE are shown instead (at
/// start-up they concern migrations and connections, never a request's data).
struct StartupFailure: Error, CustomStringConvertible {
    let description: String

    /// Runs the body; a database error comes out with its server message.
    static func reporting<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as PSQLError {
            let message = error.serverInfo?[.message] ?? "could not reach PostgreSQL (\(error.code))"
            let state = error.serverInfo?[.sqlState].map { " [SQLSTATE \($0)]" } ?? ""
            throw StartupFailure(description: "database: \(message)\(state)")
        }
    }
}
