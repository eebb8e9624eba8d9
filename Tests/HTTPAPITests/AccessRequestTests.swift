import Foundation
import HTTPAPI
import HTTPTypes
import Testing

@Suite("Access requests: a party asks, the individual decides")
struct AccessRequestTests {
    static func ask(_ api: APIClient, _ party: String, fiscalCode: any Sendable, _ extra: JSONObject = [:]) async throws -> APIClient.Reply {
        var body: JSONObject = ["fiscalCode": fiscalCode, "types": ["heartRate", "location"], "purpose": "Cardiology study", "subscribe": true]
        body.merge(extra) { $1 }
        return try await api.send(.post, "/api/thirdparties/requests", token: party, json: body)
    }

    @Test func wholeLifeCycleWithHistory() async throws {
        try await TestServer.run { api in
            let (person, account) = try await api.individualSession()
            let (party, _) = try await api.thirdPartySession()
            let asked = try await Self.ask(api, party, fiscalCode: account["fiscalCode"]!, ["dataFrom": "2026-01-01T00:00:00Z"])
            #expect(asked.status == .accepted)
            #expect(asked.string("status") == "pending")
            let id = try #require(asked.string("id"))

            let mine = try await api.send(.get, "/api/users/requests?status=pending", token: person)
            #expect(mine.items.compactMap { $0["id"] as? String } == [id])
            #expect((mine.items.first?["organisation"] as? [String: Any])?["name"] != nil)
            #expect(mine.items.first?["fiscalCode"] == nil)

            let accepted = try await api.send(.put, "/api/users/requests/\(id)", token: person, json: ["decision": "accept", "types": ["heartRate"]])
            #expect(accepted.string("status") == "granted")
            #expect((accepted.json["grant"] as? [String: Any])?["types"] as? [String] == ["heartRate"])

            let seenByParty = try await api.send(.get, "/api/thirdparties/requests/\(id)", token: party)
            #expect(seenByParty.string("status") == "granted")
            #expect((seenByParty.json["grant"] as? [String: Any])?["dataFrom"] as? String == "2026-01-01T00:00:00Z")

            let revoked = try await api.send(.post, "/api/users/requests/\(id)/revoke", token: person)
            #expect(revoked.string("status") == "revoked")
            let history = (revoked.json["history"] as? [[String: Any]] ?? []).map { "\($0["status"]!)/\($0["actor"]!)" }
            #expect(history == ["pending/third_party", "granted/individual", "revoked/individual"])
            #expect(try await api.send(.post, "/api/users/requests/\(id)/revoke", token: person).status == .conflict)
            #expect(try await api.send(.put, "/api/users/requests/\(id)", token: person, json: ["decision": "deny"]).status == .conflict)
        }
    }

    @Test func unknownFiscalCodeIsIndistinguishable() async throws {
        try await TestServer.run { api in
            let (_, account) = try await api.individualSession()
            let (party, _) = try await api.thirdPartySession()
            let known = try await Self.ask(api, party, fiscalCode: account["fiscalCode"]!)
            let unknown = try await Self.ask(api, party, fiscalCode: "ZZ1234567")
            #expect(known.status == unknown.status)
            let keys = { (reply: APIClient.Reply) in reply.json.keys.sorted() }
            #expect(keys(known) == keys(unknown))
            #expect(known.string("status") == "pending" && unknown.string("status") == "pending")
            #expect((known.json["history"] as? [Any])?.count == (unknown.json["history"] as? [Any])?.count)
        }
    }

    @Test func narrowingNeverWidens() async throws {
        try await TestServer.run { api in
            let (person, account) = try await api.individualSession()
            let (party, _) = try await api.thirdPartySession()
            let id = try await Self.ask(
                api, party, fiscalCode: account["fiscalCode"]!,
                [
                    "dataFrom": "2026-01-01T00:00:00Z", "dataTo": "2026-06-01T00:00:00Z", "accessUntil": "2030-01-01T00:00:00Z",
                ]
            ).string("id")!
            let widenings: [(JSONObject, String)] = [
                (["types": ["heartRate", "stepCount"]], "types"),
                (["dataFrom": "2025-12-31T00:00:00Z"], "dataFrom"),
                (["dataTo": "2026-06-02T00:00:00Z"], "dataTo"),
                (["accessUntil": "2031-01-01T00:00:00Z"], "accessUntil"),
            ]
            for (change, field) in widenings {
                var body: JSONObject = ["decision": "accept"]
                body.merge(change) { $1 }
                let reply = try await api.send(.put, "/api/users/requests/\(id)", token: person, json: body)
                #expect(reply.problemFields == [field])
            }
            let narrowed = try await api.send(
                .put, "/api/users/requests/\(id)", token: person,
                json: [
                    "decision": "accept", "types": ["location"], "dataFrom": "2026-02-01T00:00:00Z", "accessUntil": "2029-01-01T00:00:00Z",
                ])
            let grant = narrowed.json["grant"] as? [String: Any]
            #expect(grant?["types"] as? [String] == ["location"])
            #expect(grant?["dataFrom"] as? String == "2026-02-01T00:00:00Z")
            #expect(grant?["dataTo"] as? String == "2026-06-01T00:00:00Z")
            #expect(grant?["accessUntil"] as? String == "2029-01-01T00:00:00Z")
        }
    }

    @Test func duplicatesAndBlocking() async throws {
        try await TestServer.run { api in
            let (person, account) = try await api.individualSession()
            let (party, _) = try await api.thirdPartySession()
            let first = try await Self.ask(api, party, fiscalCode: account["fiscalCode"]!)
            #expect(try await Self.ask(api, party, fiscalCode: account["fiscalCode"]!).status == .conflict)
            let organisation = try #require(
                (try await api.send(.get, "/api/users/requests", token: person).items.first?["organisation"] as? [String: Any])?["id"] as? String)

            #expect(
                try await api.send(.post, "/api/users/blocked-parties", token: person, json: ["organisationId": organisation]).status == .noContent)
            #expect(try await api.send(.get, "/api/thirdparties/requests/\(first.string("id")!)", token: party).string("status") == "denied")
            // A blocked party's next request looks exactly like one to a fiscal code nobody holds
            // (a block must not be told from silence), and the person never sees it.
            let again = try await Self.ask(api, party, fiscalCode: account["fiscalCode"]!)
            let unknown = try await Self.ask(api, party, fiscalCode: "ZZ7654321")
            #expect(again.status == .accepted && again.status == unknown.status)
            #expect(again.string("status") == "pending" && unknown.string("status") == "pending")
            #expect(again.json.keys.sorted() == unknown.json.keys.sorted())
            #expect((again.json["history"] as? [[String: Any]])?.map { $0["status"] as? String } == ["pending"])
            #expect((again.json["history"] as? [Any])?.count == (unknown.json["history"] as? [Any])?.count)
            let withheld = try #require(again.string("id"))
            #expect(try await api.send(.get, "/api/users/requests", token: person).items.map { $0["id"] as? String } == [first.string("id")])
            #expect(try await api.send(.get, "/api/users/requests/\(withheld)", token: person).status == .notFound)
            #expect(try await api.send(.put, "/api/users/requests/\(withheld)", token: person, json: ["decision": "accept"]).status == .notFound)
            #expect(try await api.send(.get, "/api/users/blocked-parties", token: person).items.count == 1)

            // Unblocked: the withheld request stays out of sight and stands until it lapses, as
            // any unanswered request does (pendingRequestsExpire: then a new one may be filed).
            #expect(try await api.send(.delete, "/api/users/blocked-parties/\(organisation)", token: person).status == .noContent)
            #expect(try await Self.ask(api, party, fiscalCode: account["fiscalCode"]!).status == .conflict)
            #expect(try await api.send(.get, "/api/users/requests", token: person).items.count == 1)
            #expect(
                try await api.send(.post, "/api/users/blocked-parties", token: person, json: ["organisationId": UUID().uuidString]).problemFields == [
                    "organisationId"
                ])
        }
    }

    @Test func pendingRequestsExpire() async throws {
        try await TestServer.run(configure: { $0.requestLifetime = .seconds(1) }) { api in
            let (person, account) = try await api.individualSession()
            let (party, _) = try await api.thirdPartySession()
            let id = try await Self.ask(api, party, fiscalCode: account["fiscalCode"]!).string("id")!
            try await Task.sleep(for: .milliseconds(1500))
            #expect(try await api.send(.get, "/api/thirdparties/requests/\(id)", token: party).string("status") == "expired")
            #expect(try await api.send(.put, "/api/users/requests/\(id)", token: person, json: ["decision": "accept"]).status == .conflict)
            // A lapsed request no longer blocks a new one.
            #expect(try await Self.ask(api, party, fiscalCode: account["fiscalCode"]!).status == .accepted)
        }
    }

    @Test func nobodyElseSeesOrAnswersARequest() async throws {
        try await TestServer.run { api in
            let (_, account) = try await api.individualSession()
            let (stranger, _) = try await api.individualSession()
            let (party, _) = try await api.thirdPartySession()
            let (otherParty, _) = try await api.thirdPartySession()
            let id = try await Self.ask(api, party, fiscalCode: account["fiscalCode"]!).string("id")!
            #expect(try await api.send(.get, "/api/users/requests", token: stranger).items.isEmpty)
            #expect(try await api.send(.get, "/api/users/requests/\(id)", token: stranger).status == .notFound)
            #expect(try await api.send(.put, "/api/users/requests/\(id)", token: stranger, json: ["decision": "accept"]).status == .notFound)
            #expect(try await api.send(.post, "/api/users/requests/\(id)/revoke", token: stranger).status == .notFound)
            #expect(try await api.send(.get, "/api/thirdparties/requests/\(id)", token: otherParty).status == .notFound)
            #expect(try await api.send(.get, "/api/thirdparties/requests", token: otherParty).items.isEmpty)
            #expect(try await api.send(.get, "/api/users/requests", token: party).status == .forbidden)
        }
    }

    @Test func badRequestsNameTheField() async throws {
        try await TestServer.run { api in
            let (party, _) = try await api.thirdPartySession()
            let reply = try await api.send(
                .post, "/api/thirdparties/requests", token: party,
                json: [
                    "fiscalCode": "RSSMRA85T10A562T", "types": ["mood"], "purpose": " ", "dataFrom": "yesterday",
                ])
            #expect(Set(reply.problemFields) == ["fiscalCode", "types", "purpose", "dataFrom"])
            let window = try await Self.ask(
                api, party, fiscalCode: "X1234567", ["dataFrom": "2026-02-01T00:00:00Z", "dataTo": "2026-01-01T00:00:00Z"])
            #expect(window.problemFields == ["dataTo"])
            let empty = try await Self.ask(api, party, fiscalCode: "X1234567", ["types": [String]()])
            #expect(empty.problemFields == ["types"])
        }
    }
}
