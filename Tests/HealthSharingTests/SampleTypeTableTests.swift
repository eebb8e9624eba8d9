import DatabaseLink
import DatabaseTestSupport
import HealthSharing
import PostgresNIO
import Testing

@Suite("The database's sample_types table matches the catalogue")
struct SampleTypeTableTests {
    @Test func codesNamesAndRollupsAgree() async throws {
        let url = try await TestPostgres.shared.migratedDatabase()
        let database = Database(configuration: url.clientConfiguration(maximumConnections: 1), logger: TestPostgres.logger)
        try await database.whileRunning {
            let rows = try await database.query("SELECT code, name, rolled_up FROM sample_types ORDER BY code")
            let table = try rows.map { try $0.decode((Int16, String, Bool).self) }
            let catalogue = SampleType.allCases.map { ($0.storageCode, $0.rawValue, $0.hasDailyRollup) }.sorted { $0.0 < $1.0 }
            #expect(table.count == catalogue.count)
            for (stored, swift) in zip(table, catalogue) {
                #expect(stored.0 == swift.0 && stored.1 == swift.1 && stored.2 == swift.2)
            }
        }
    }
}
