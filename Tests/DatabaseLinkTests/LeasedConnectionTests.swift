import DatabaseLink
import DatabaseTestSupport
import Foundation
import Logging
import PostgresNIO
import Testing

/// A connection the server closes (PostgreSQL's shutdown ends every backend) must fail the
/// statements written to it afterwards, not leave them waiting: postgres-nio 1.33.2 drops such a
/// statement without answering, and a request — and the server's shutdown — waited forever.
/// Each test has a time limit: with the statements sent on `underlying` instead, they hang.
@Suite("LeasedConnection: statements on a connection the server closed fail at once")
struct LeasedConnectionTests {
    private static func withDatabase(_ body: @Sendable (Database) async throws -> Void) async throws {
        let url = try await TestPostgres.shared.emptyDatabase()
        let database = Database(configuration: url.clientConfiguration(maximumConnections: 4), logger: TestPostgres.logger)
        try await database.whileRunning { try await body(database) }
    }

    /// Ends the backend behind `connection` from another connection, as a shutdown does, and
    /// waits until the client has seen the connection close.
    private static func terminateBackend(of connection: LeasedConnection, from database: Database) async throws {
        let pid = try await connection.query("SELECT pg_backend_pid()", logger: TestPostgres.logger).collect()[0].decode(Int32.self)
        try await database.query("SELECT pg_terminate_backend(\(pid))")
        try await connection.underlying.closeFuture.get()
    }

    @Test(.timeLimit(.minutes(20))) func aStatementAfterTheServerClosedTheConnectionFails() async throws {
        try await Self.withDatabase { database in
            await #expect(throws: ConnectionLost.self) {
                try await database.withConnection { connection in
                    try await Self.terminateBackend(of: connection, from: database)
                    try await connection.query("SELECT 1", logger: TestPostgres.logger)
                }
            }
            // The pool goes on with a new connection.
            let after = try await database.query("SELECT 2")
            #expect(try after[0].decode(Int.self) == 2)
        }
    }

    @Test(.timeLimit(.minutes(20))) func aTransactionWhoseConnectionClosedFailsAndCommitsNothing() async throws {
        try await Self.withDatabase { database in
            try await database.query("CREATE TABLE kept (n int)")
            await #expect(throws: ConnectionLost.self) {
                try await database.withTransaction { connection in
                    try await connection.query("INSERT INTO kept VALUES (1)", logger: TestPostgres.logger)
                    try await Self.terminateBackend(of: connection, from: database)
                    try await connection.query("INSERT INTO kept VALUES (2)", logger: TestPostgres.logger)
                }
            }
            // The body's own error after the close: the ROLLBACK is skipped, nothing hangs.
            struct Refused: Error {}
            await #expect(throws: Refused.self) {
                try await database.withTransaction { connection in
                    try await connection.query("INSERT INTO kept VALUES (3)", logger: TestPostgres.logger)
                    try await Self.terminateBackend(of: connection, from: database)
                    throw Refused()
                }
            }
            let kept = try await database.query("SELECT count(*) FROM kept")
            #expect(try kept[0].decode(Int.self) == 0)
        }
    }

    @Test func statementsOnAHealthyConnectionAnswerAsBefore() async throws {
        try await Self.withDatabase { database in
            let sum = try await database.withTransaction { connection in
                var total = 0
                for n in 1...50 {
                    total += try await connection.query("SELECT \(n)::int8", logger: TestPostgres.logger).collect()[0].decode(Int.self)
                }
                return total
            }
            #expect(sum == 1275)
            struct Refused: Error {}
            await #expect(throws: Refused.self) {
                try await database.withTransaction { connection in
                    try await connection.query("CREATE TABLE rolled_back (n int)", logger: TestPostgres.logger)
                    throw Refused()
                }
            }
            let tables = try await database.query("SELECT count(*) FROM pg_tables WHERE tablename = 'rolled_back'")
            #expect(try tables[0].decode(Int.self) == 0)
        }
    }
}
