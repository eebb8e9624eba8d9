import AccessManager
import Data4HelpCore
import DatabaseLink
import DatabaseTestSupport
import Foundation
import PostgresNIO
import Testing

@Suite("Ended login tokens are purged after their retention")
struct TokenJanitorTests {
    @Test func purgesOnlyTokensEndedBeforeTheRetention() async throws {
        let url = try await TestPostgres.shared.migratedDatabase()
        let database = Database(configuration: url.clientConfiguration(maximumConnections: 2), logger: TestPostgres.logger)
        try await database.whileRunning {
            let party = try await ThirdPartyStore(database: database).insert(name: "Org", email: "o@example.org", passwordHash: "x")
            let tokens = AccessTokenStore(database: database)
            let owner = AccountReference.thirdParty(party.id)
            let now = Date()
            _ = try await tokens.insert(owner: owner, tokenHash: Array(repeating: 1, count: 32), expiresAt: now.addingTimeInterval(-8 * 86400))
            _ = try await tokens.insert(owner: owner, tokenHash: Array(repeating: 2, count: 32), expiresAt: now.addingTimeInterval(-3600))
            let live = try await tokens.insert(owner: owner, tokenHash: Array(repeating: 3, count: 32), expiresAt: now.addingTimeInterval(3600))

            await TokenJanitor(database: database, logger: TestPostgres.logger).purgeOnce()

            let left = try await database.query("SELECT count(*) FROM access_tokens")
            #expect(try left[0].decode(Int.self) == 2)  // the recently expired one stays for a week
            #expect(try await tokens.list(owner: owner, beforeId: nil, limit: 10).map(\.id) == [live.id])
        }
    }
}
