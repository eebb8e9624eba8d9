import AccessManager
import Data4HelpCore
import DatabaseLink
import DatabaseTestSupport
import Foundation
import PostgresNIO
import Testing

@Suite("A credential's last use: the first in its request, later ones in the background, many in one statement")
struct CredentialUseTests {
    @Test func firstUseInTheRequestLaterOnesWrittenTogetherInTheBackground() async throws {
        let url = try await TestPostgres.shared.migratedDatabase()
        let database = Database(configuration: url.clientConfiguration(maximumConnections: 4), logger: TestPostgres.logger)
        try await database.whileRunning {
            let party = try await ThirdPartyStore(database: database).insert(name: "Org", email: "o@example.org", passwordHash: "x")
            let tokens = AccessTokenStore(database: database)
            let owner = AccountReference.thirdParty(party.id)
            let bearers = (0..<200).map { BearerSecret.accessTokenPrefix + "use-test-\($0)" }
            var ids: [Int64] = []
            for bearer in bearers {
                ids.append(
                    try await tokens.insert(owner: owner, tokenHash: BearerSecret.digest(bearer), expiresAt: Date().addingTimeInterval(3_600)).id)
            }
            let uses = CredentialUseWriter(database: database)
            let authenticator = Authenticator(tokens: tokens, apiKeys: APIKeyStore(database: database), uses: uses)
            func lastUses() async throws -> [Date?] {
                try await database.query("SELECT last_used_at FROM access_tokens WHERE id = ANY(\(ids)) ORDER BY id").map {
                    try $0.decode(Date?.self)
                }
            }

            // A first use ever is written before the request goes on: a listing right after shows it.
            _ = try await authenticator.authenticate(bearer: bearers[0], on: .thirdParty)
            #expect(try await lastUses()[0] != nil)
            #expect(uses.statements == 0)

            // Uses older than the period: noted, written after the requests, many in a statement.
            try await database.query("UPDATE access_tokens SET last_used_at = now() - interval '10 minutes' WHERE id = ANY(\(ids))")
            let before = try await lastUses()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for bearer in bearers { group.addTask { _ = try await authenticator.authenticate(bearer: bearer, on: .thirdParty) } }
                try await group.waitForAll()
            }
            let deadline = ContinuousClock.now + .seconds(10)
            var after = try await lastUses()
            while zip(before, after).contains(where: { $0 == $1 }), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
                after = try await lastUses()
            }
            #expect(zip(before, after).allSatisfy { old, new in (new ?? .distantPast) > (old ?? .distantPast) }, "every use written")
            #expect(uses.statements >= 1 && uses.statements < bearers.count, "\(bearers.count) uses in \(uses.statements) statements")
        }
    }
}
