import DatabaseLink
import DatabaseTestSupport
import Foundation
import PostgresNIO
import Testing

/// `Int8ArrayColumn` against what PostgreSQL itself sends: the same values as PostgresNIO's own
/// `[Int64]` decoding for every shape an `int8[]` takes, and a refusal for what it is not.
@Suite struct Int8ArrayColumnTests {
    @Test func readsWhatPostgreSQLSendsAndRefusesTheRest() async throws {
        let url = try await TestPostgres.shared.emptyDatabase()
        let database = Database(configuration: url.clientConfiguration(maximumConnections: 1), logger: TestPostgres.logger)
        try await database.whileRunning {
            let arrays = [
                "'{}'::int8[]", "ARRAY[0]::int8[]", "ARRAY[-9223372036854775808, 9223372036854775807, -1, 1]::int8[]",
                "(SELECT array_agg(n::int8 * 7919 - 400000) FROM generate_series(1, 100000) AS n)",
            ]
            for array in arrays {
                let row = try await database.query("SELECT \(unescaped: array)")[0]
                let generic = try row.decode([Int64].self)
                do {
                    let fast = try row.decode(Int8ArrayColumn.self)
                    #expect(fast.values == generic, "\(array)")
                } catch {
                    Issue.record("\(array): \(String(reflecting: error))")
                }
            }
            let refused = [
                // PostgresNIO's `[Int64]` refuses a lower bound other than 1 too.
                "ARRAY[1, NULL]::int8[]", "'[3:4]={5,6}'::int8[]", "ARRAY[1, 2]::int4[]", "'{{1,2},{3,4}}'::int8[]", "1::int8", "'{1}'::numeric[]",
            ]
            for value in refused {
                let row = try await database.query("SELECT \(unescaped: value)")[0]
                #expect(throws: (any Error).self, "\(value)") { try row.decode(Int8ArrayColumn.self) }
            }
        }
    }
}
