import DatabaseLink
import DatabaseTestSupport
import HealthSharing
import PostgresNIO
import Testing

@Suite("The database's sample_types table matches the catalogue and the derived subjects")
struct SampleTypeTableTests {
    @Test func codesNamesAndRollupsAgree() async throws {
        let url = try await TestPostgres.shared.migratedDatabase()
        let database = Database(configuration: url.clientConfiguration(maximumConnections: 1), logger: TestPostgres.logger)
        try await database.whileRunning {
            let rows = try await database.query("SELECT code, name, rolled_up FROM sample_types ORDER BY code")
            let table = try rows.map { try $0.decode((Int16, String, Bool).self) }
            // Uploaded types, rolled up by the ingest statement as their definition says, then the
            // derived ones (migration 0041), which the ingest never writes.
            let catalogue = AggregateSubject.all.map { subject -> (Int16, String, Bool) in
                if case .sample(let type) = subject { return (type.storageCode, type.rawValue, type.hasDailyRollup) }
                return (subject.storageCode, subject.rawValue, false)
            }.sorted { $0.0 < $1.0 }
            #expect(table.count == catalogue.count)
            for (stored, swift) in zip(table, catalogue) {
                #expect(stored.0 == swift.0 && stored.1 == swift.1 && stored.2 == swift.2)
            }
        }
    }
}
