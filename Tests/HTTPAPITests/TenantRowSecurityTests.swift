import DatabaseLink
import DatabaseTestSupport
import Foundation
import HTTPAPI
import HTTPTypes
import PostgresNIO
import Testing

/// Row-level security on the tenant tables (migration 0018): within an organisation's
/// `TenantScope` — as every third-party request runs — a query that forgets to filter by
/// organisation still sees and writes only that organisation's rows.
@Suite("Tenancy in depth: row-level security for third-party requests")
struct TenantRowSecurityTests {
    @Test func anUnscopedQueryInAnOrganisationsScopeSeesOnlyItsRows() async throws {
        let url = try await TestPostgres.shared.migratedDatabase()
        try await TestServer.run(database: url) { api in
            // Two organisations, each with a request, an API key and events; a third with nothing.
            let (person, account) = try await api.individualSession()
            let database = Database(configuration: url.clientConfiguration(maximumConnections: 2), logger: TestPostgres.logger)
            try await database.whileRunning {
                var organisations: [Int64] = []
                for name in ["first", "second", "third"] {
                    let (party, registered) = try await api.thirdPartySession()
                    if name != "third" {
                        #expect(try await AccessRequestTests.ask(api, party, fiscalCode: account["fiscalCode"]!).status == .accepted)
                        _ = try await api.send(.post, "/api/thirdparties/keys", token: party, json: ["name": name])
                    }
                    let email = try #require(registered["email"] as? String)
                    organisations.append(
                        try #require(try await database.query("SELECT id FROM third_parties WHERE email = \(email)").first?.decode(Int64.self)))
                }
                // The person grants both: events for each organisation.
                for request in try await api.send(.get, "/api/users/requests", token: person).items {
                    let id = try #require(request["id"] as? String)
                    #expect(try await api.send(.put, "/api/users/requests/\(id)", token: person, json: ["decision": "accept"]).status == .ok)
                }

                let (first, second, third) = (organisations[0], organisations[1], organisations[2])
                for table in ["access_requests", "party_events", "api_keys"] {
                    // The owner (migrations, background work) sees every organisation's rows.
                    let all = try await Self.owners(of: table, on: database)
                    #expect(Set(all) == [first, second], "\(table): \(all)")
                    // The same query, unfiltered, within a scope: that organisation's rows only.
                    let seenByFirst = try await TenantScope.$thirdPartyId.withValue(first) { try await Self.owners(of: table, on: database) }
                    #expect(!seenByFirst.isEmpty && seenByFirst.allSatisfy { $0 == first }, "\(table): \(seenByFirst)")
                    let seenByThird = try await TenantScope.$thirdPartyId.withValue(third) { try await Self.owners(of: table, on: database) }
                    #expect(seenByThird.isEmpty, "\(table): \(seenByThird)")
                }

                // Writing another organisation's rows is refused too.
                // Writing another organisation's rows is refused too: they cannot be seen to be updated,
                // and a row cannot be handed to another organisation.
                let moved = try await TenantScope.$thirdPartyId.withValue(first) {
                    try await database.query("UPDATE access_requests SET purpose = 'taken over' WHERE third_party_id = \(second) RETURNING id")
                }
                #expect(moved.isEmpty, "no row of the second organisation is visible to update")
                await #expect(throws: PSQLError.self) {
                    try await TenantScope.$thirdPartyId.withValue(first) {
                        try await database.query("UPDATE access_requests SET third_party_id = \(second) WHERE third_party_id = \(first)")
                    }
                }
                #expect(Set(try await Self.owners(of: "access_requests", on: database)) == [first, second])
            }
        }
    }

    static func owners(of table: String, on database: Database) async throws -> [Int64] {
        // Deliberately unscoped: no WHERE clause. The table name is one of three literals above.
        try await database.query(PostgresQuery(unsafeSQL: "SELECT third_party_id FROM \(table)")).map { try $0.decode(Int64.self) }
    }
}
