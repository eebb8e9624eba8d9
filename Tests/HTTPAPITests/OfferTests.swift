import AsyncHTTPClient
import DatabaseLink
import DatabaseTestSupport
import Foundation
import HTTPTypes
import PostgresNIO
import Testing

/// Organisations' profiles and directory, and offers: an individual offers chosen data to an
/// organisation, which accepts (the offer becomes a grant like any other) or declines.
@Suite("Offers and the organisations' directory")
struct OfferTests {
    static let profile: [String: any Sendable] = [
        "listed": true, "purpose": "Cardiology research at a university hospital", "privacyContact": "dpo@heart.test",
        "website": "https://heart.test/research",
    ]

    /// Runs one statement on the test's database, outside the server; answers the first column
    /// of the first row as an integer (0 when none).
    @discardableResult
    static func sql(_ database: DatabaseURL, _ text: String) async throws -> Int {
        let direct = Database(configuration: database.clientConfiguration(maximumConnections: 1), logger: TestPostgres.logger)
        return try await direct.whileRunning {
            Int(try await direct.query(PostgresQuery(unsafeSQL: text)).first?.decode(Int64.self) ?? 0)
        }
    }

    /// The first column of the first row as text ("" for none).
    static func text(_ database: DatabaseURL, _ text: String) async throws -> String {
        let direct = Database(configuration: database.clientConfiguration(maximumConnections: 1), logger: TestPostgres.logger)
        return try await direct.whileRunning {
            try await direct.query(PostgresQuery(unsafeSQL: "SELECT (\(text))::text")).first?.decode(String?.self) ?? ""
        }
    }

    /// A party with a published profile; its login token and public id.
    static func listedParty(_ api: some APISending, listed: Bool = true) async throws -> (token: String, id: String, name: String) {
        let (token, account) = try await api.thirdPartySession()
        var profile = Self.profile
        profile["listed"] = listed
        let published = try await api.send(.put, "/api/thirdparties/me/profile", token: token, json: profile)
        precondition(published.status == .ok, "\(published.json)")
        return (token, published.string("id")!, account["name"] as! String)
    }

    @Test func theDirectoryListsOnlyOrganisationsThatOptIn() async throws {
        try await TestServer.run { api in
            let listed = try await Self.listedParty(api)
            let unlisted = try await Self.listedParty(api, listed: false)
            let (person, _) = try await api.individualSession()
            let query = String(listed.name.suffix(8)).addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let found = try await api.send(.get, "/api/users/organisations?q=\(query)", token: person)
            #expect(found.status == .ok && found.items.map { $0["id"] as? String } == [listed.id])
            #expect(found.items.first?["privacyContact"] as? String == "dpo@heart.test")
            let all = try await api.send(.get, "/api/users/organisations", token: person).items.compactMap { $0["id"] as? String }
            #expect(all.contains(listed.id) && !all.contains(unlisted.id))
            #expect(try await api.send(.get, "/api/users/organisations/\(unlisted.id)", token: person).status == .notFound)
            #expect(try await api.send(.get, "/api/users/organisations/\(listed.id)", token: person).string("name") == listed.name)

            // Bad profiles are refused field by field; the profile needs a login, not an API key.
            let bad = try await api.send(
                .put, "/api/thirdparties/me/profile", token: listed.token,
                json: ["purpose": "", "privacyContact": "nobody", "website": "http://heart.test"])
            #expect(Set(bad.problemFields) == ["purpose", "privacyContact", "website"])
            let key = try await api.send(.post, "/api/thirdparties/keys", token: listed.token, json: ["name": "server"]).string("key")!
            #expect(try await api.send(.put, "/api/thirdparties/me/profile", token: key, json: Self.profile).status == .forbidden)
            #expect(
                try await api.send(.get, "/api/thirdparties/me/profile", token: listed.token).string("purpose") == Self.profile["purpose"] as? String)
            #expect(try await api.send(.delete, "/api/thirdparties/me/profile", token: listed.token).status == .noContent)
            #expect(try await api.send(.get, "/api/thirdparties/me/profile", token: listed.token).status == .notFound)
        }
    }

    @Test func anAcceptedOfferIsAGrantLikeAnyOther() async throws {
        let database = try await TestPostgres.shared.migratedDatabase()
        try await TestServer.run(database: database) { api in
            let party = try await Self.listedParty(api)
            let (person, account) = try await api.individualSession()
            let offer: [String: any Sendable] = [
                "organisationId": party.id, "message": "For your heart study; reach me by e-mail.", "types": ["heartRate"], "subscribe": true,
            ]
            let made = try await api.send(.post, "/api/users/offers", token: person, json: offer)
            #expect(made.status == .created && made.string("status") == "offered", "\(made.json)")
            let id = try #require(made.string("id"))
            #expect((made.json["organisation"] as? [String: Any])?["id"] as? String == party.id)
            #expect(try await api.send(.post, "/api/users/offers", token: person, json: offer).status == .conflict)
            // The organisation is told by its usual channels: an offer.received event naming the offer.
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            defer { try? http.shutdown().wait() }
            var stream = try await EventStreamReader.open(http, port: try #require(api.client.port), token: party.token)
            let told = try await stream.next()
            #expect(told.type == "offer.received" && told.json["offerId"] as? String == id && told.json["requestId"] == nil)
            var unknown = offer
            unknown["organisationId"] = UUID().uuidString
            #expect(try await api.send(.post, "/api/users/offers", token: person, json: unknown).problemFields == ["organisationId"])

            // Only the person and that organisation see it.
            let (stranger, _) = try await api.individualSession()
            let other = try await api.thirdPartySession().token
            #expect(try await api.send(.get, "/api/users/offers/\(id)", token: stranger).status == .notFound)
            #expect(try await api.send(.get, "/api/thirdparties/offers/\(id)", token: other).status == .notFound)
            #expect(try await api.send(.post, "/api/thirdparties/offers/\(id)/accept", token: other).status == .notFound)
            #expect(try await api.send(.post, "/api/users/offers/\(id)/withdraw", token: stranger).status == .notFound)
            let seen = try await api.send(.get, "/api/thirdparties/offers?status=offered", token: party.token)
            #expect(seen.items.map { $0["id"] as? String } == [id])
            #expect((seen.items.first?["person"] as? [String: Any])?["fiscalCode"] as? String == account["fiscalCode"] as? String)

            _ = try await api.send(.post, "/api/users/data", token: person, json: ["items": SubscriptionFeedTests.upload])
            let accepted = try await api.send(.post, "/api/thirdparties/offers/\(id)/accept", token: party.token)
            #expect(accepted.status == .ok && accepted.string("status") == "accepted")
            let grant = try #require(accepted.string("grantId"))
            #expect(try await api.send(.post, "/api/thirdparties/offers/\(id)/accept", token: party.token).status == .conflict)
            #expect(try await api.send(.post, "/api/users/offers/\(id)/withdraw", token: person).status == .conflict)

            // The grant: read by pull, told by events, listed on both sides; the person narrows or revokes it as any grant.
            let request = try await api.send(.get, "/api/thirdparties/requests/\(grant)", token: party.token)
            #expect(request.string("status") == "granted" && request.string("origin") == "offer")
            let pulled = try await api.send(.get, "/api/thirdparties/requests/\(grant)/data", token: party.token)
            #expect(pulled.items.compactMap { $0["value"] as? Double }.sorted() == [70, 71])
            let granted = try await Self.sql(
                database,
                """
                SELECT count(*) FROM party_events e JOIN access_requests r ON r.id = e.request_id
                WHERE r.public_id = '\(grant)' AND e.event_type = 'request.granted'
                """)
            #expect(granted == 1)
            let mine = try await api.send(.get, "/api/users/requests/\(grant)", token: person)
            #expect(mine.string("origin") == "offer")
            #expect(((mine.json["organisation"] as? [String: Any])?["profile"] as? [String: Any])?["privacyContact"] as? String == "dpo@heart.test")
            let wider = try await api.send(.patch, "/api/users/requests/\(grant)", token: person, json: ["types": ["heartRate", "stepCount"]])
            #expect(wider.problemFields == ["types"])
            #expect(try await api.send(.post, "/api/users/requests/\(grant)/revoke", token: person).string("status") == "revoked")
            #expect(try await api.send(.get, "/api/thirdparties/requests/\(grant)/data", token: party.token).status == .forbidden)
        }
    }

    @Test func anOfferIsDeclinedWithdrawnOrLapses() async throws {
        let database = try await TestPostgres.shared.migratedDatabase()
        try await TestServer.run(database: database) { api in
            let first = try await Self.listedParty(api), second = try await Self.listedParty(api), third = try await Self.listedParty(api)
            let (person, _) = try await api.individualSession()
            func offer(_ party: String) async throws -> String {
                try #require(
                    try await api.send(
                        .post, "/api/users/offers", token: person,
                        json: ["organisationId": party, "message": "Offered", "types": ["stepCount"]]
                    ).string("id"))
            }
            let declined = try await offer(first.id)
            #expect(try await api.send(.post, "/api/thirdparties/offers/\(declined)/decline", token: first.token).string("status") == "declined")
            let withdrawn = try await offer(second.id)
            #expect(try await api.send(.post, "/api/users/offers/\(withdrawn)/withdraw", token: person).string("status") == "withdrawn")
            #expect(try await api.send(.post, "/api/thirdparties/offers/\(withdrawn)/accept", token: second.token).status == .conflict)
            // A declined offer does not stand in the way of a new one.
            let again = try await offer(first.id)
            #expect(again != declined)

            let lapsed = try await offer(third.id)
            try await Self.sql(
                database, "UPDATE data_offers SET expires_at = now() - interval '1 second' WHERE public_id = '\(lapsed)' RETURNING 1::int8")
            #expect(try await api.send(.get, "/api/users/offers/\(lapsed)", token: person).string("status") == "expired")
            #expect(try await api.send(.post, "/api/thirdparties/offers/\(lapsed)/accept", token: third.token).status == .conflict)
            let list = try await api.send(.get, "/api/users/offers", token: person).items.compactMap { $0["status"] as? String }
            #expect(list == ["expired", "offered", "withdrawn", "declined"])
            // Bad offers are refused field by field.
            let bad = try await api.send(.post, "/api/users/offers", token: person, json: ["organisationId": "x", "types": ["blood"]])
            #expect(Set(bad.problemFields) == ["organisationId", "message", "types"])
        }
    }
}
