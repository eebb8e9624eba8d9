import DatabaseLink
import DatabaseTestSupport
import Foundation
import HTTPAPI
import HTTPTypes
import HealthSharing
import Testing

/// `GET /api/users/privacy-record`: per organisation the requests, grants and what it received;
/// the share links; and exactly the released aggregate answers whose population included me.
@Suite("The privacy record")
struct PrivacyRecordTests {
    static func day(_ offset: Double) -> String {
        ISO8601DateFormatter.string(from: Date().addingTimeInterval(offset * 86_400), timeZone: .gmt, formatOptions: .withFullDate)
    }

    @Test func itListsExactlyTheReleasedAnswersThatCountedMe() async throws {
        let database = try await TestPostgres.shared.migratedDatabase()
        try await TestServer.run(database: database, configure: { $0.aggregateMinimumGroup = 5 }) { api in
            let seeding = Database(configuration: database.clientConfiguration(maximumConnections: 1), logger: TestPostgres.logger)
            try await seeding.whileRunning { try await PopulationSeeder(database: seeding).seed(individuals: 400, days: 40, tag: "privacy") }
            let (person, account) = try await api.individualSession(["homeArea": "DE-BE"])
            let yesterday = Self.day(-1)
            let steps: [any Sendable] = [
                ["type": "stepCount", "value": 6_000, "start": "\(yesterday)T09:00:00Z", "end": "\(yesterday)T10:00:00Z"] as JSONObject
            ]
            _ = try await api.send(.post, "/api/users/data", token: person, json: ["items": steps])
            let window: JSONObject = ["type": "stepCount", "statistic": "mean", "from": Self.day(-20), "to": Self.day(0), "epsilon": 1.0]
            // Each question from an organisation of its own (one day's budget holds one at this ε).
            func ask(_ changes: JSONObject) async throws -> (id: String, status: String) {
                let (party, _) = try await api.thirdPartySession()
                let reply = try await api.send(.post, "/api/thirdparties/aggregates", token: party, json: window.merging(changes) { $1 })
                return (try #require(reply.string("id"), "\(reply.json)"), reply.string("status") ?? "")
            }
            let counted = try await ask(["groupBy": "sex"])
            #expect(counted.status == "answered")
            let otherSex = try await ask(["sex": "male"])  // answered, without me
            let onlyMe = try await ask(["areas": ["DE-BE"]])  // one person: refused, released nothing
            #expect(otherSex.status == "answered" && onlyMe.status == "refused")
            let otherType = try await ask(["type": "heartRate", "statistic": "count"])  // I have no heart rate
            _ = otherType
            // Opted out: absent from the next answer.
            _ = try await api.send(.patch, "/api/users/me", token: person, json: ["aggregatesOptOut": true])
            let afterOptOut = try await ask(["statistic": "count"])
            #expect(afterOptOut.status == "answered")

            let record = try await api.send(.get, "/api/users/privacy-record", token: person)
            #expect(record.status == .ok && record.json["aggregatesOptOut"] as? Bool == true)
            let answers = try #require(record.json["aggregateAnswers"] as? [[String: Any]])
            #expect(answers.map { $0["queryId"] as? String } == [counted.id])
            let question = try #require(answers.first?["question"] as? [String: Any])
            #expect(
                question["type"] as? String == "stepCount" && question["groupBy"] as? String == "sex" && answers.first?["epsilon"] as? Double == 1.0)
            #expect(answers.first?["value"] == nil && answers.first?["groups"] == nil)

            // Every released answer's population is stored; a refused one has none.
            let stored = try await OfferTests.sql(
                database,
                "SELECT count(*) FROM aggregate_populations a JOIN aggregate_queries q ON q.id = a.query_id WHERE q.public_id = '\(onlyMe.id)'")
            #expect(stored == 0)
            let seeded = try await OfferTests.sql(
                database,
                "SELECT sum(cardinality(a.members))::int8 FROM aggregate_populations a JOIN aggregate_queries q ON q.id = a.query_id WHERE q.public_id = '\(counted.id)'"
            )
            #expect(seeded > 100)

            // Someone else's record does not show mine.
            let (stranger, _) = try await api.individualSession()
            let theirs = try await api.send(.get, "/api/users/privacy-record", token: stranger)
            #expect((theirs.json["aggregateAnswers"] as? [[String: Any]])?.isEmpty == true)

            // Erased, the person's id is in no answer's population any more.
            let me = try await OfferTests.sql(database, "SELECT id FROM individuals WHERE email = '\(account["email"] as? String ?? "")'")
            #expect(try await OfferTests.sql(database, "SELECT count(*) FROM aggregate_populations WHERE members @> ARRAY[\(me)]::int8[]") == 1)
            #expect(try await api.send(.delete, "/api/users/me", token: person, json: ["password": Fixtures.password]).status == .noContent)
            #expect(try await OfferTests.sql(database, "SELECT count(*) FROM aggregate_populations WHERE members @> ARRAY[\(me)]::int8[]") == 0)
        }
    }

    @Test func itListsEachOrganisationsGrantsAndWhatItReceivedAndMyShareLinks() async throws {
        try await TestServer.run { api in
            let (person, party, request) = try await SubscriptionFeedTests.subscribe(api, types: ["heartRate"])
            _ = try await api.send(.post, "/api/users/data", token: person, json: ["items": SubscriptionFeedTests.upload])
            _ = try await api.send(.get, "/api/thirdparties/requests/\(request)/data", token: party)
            _ = try await api.send(.post, "/api/users/share-links", token: person, json: ShareLinkTests.link())
            let record = try await api.send(.get, "/api/users/privacy-record", token: person)
            let organisations = try #require(record.json["organisations"] as? [[String: Any]])
            #expect(organisations.count == 1)
            let requests = try #require(organisations.first?["requests"] as? [[String: Any]])
            #expect(requests.map { $0["id"] as? String } == [request] && requests.first?["status"] as? String == "granted")
            let received = try #require(organisations.first?["received"] as? [String: Any])
            #expect(received["disclosures"] as? Int == 1 && received["items"] as? Int == 2 && received["channels"] as? [String] == ["pull"])
            #expect((record.json["shareLinks"] as? [[String: Any]])?.first?["label"] as? String == "Dr Rossi, cardiology")
            #expect(try await api.send(.get, "/api/users/privacy-record", token: party).status == .forbidden)

            // The export holds them too; erasure removes them with the account.
            let partyId = try #require(try await api.send(.get, "/api/thirdparties/me", token: party).string("id"))
            _ = try await api.send(
                .post, "/api/users/offers", token: person, json: ["organisationId": partyId, "message": "More data", "types": ["stepCount"]])
            let export = try await api.send(.get, "/api/users/export", token: person)
            let kinds = String(decoding: export.data, as: UTF8.self).split(separator: "\n").compactMap {
                ((try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any])?["kind"] as? String
            }
            #expect(kinds.contains("offer") && kinds.contains("shareLink") && kinds.last == "end")
            #expect(try await api.send(.delete, "/api/users/me", token: person, json: ["password": Fixtures.password]).status == .noContent)
            #expect(try await api.send(.get, "/api/thirdparties/offers", token: party).items.isEmpty)
        }
    }
}
