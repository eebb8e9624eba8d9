import Foundation
import HTTPAPI
import HTTPTypes
import Testing

@Suite("GET /api/thirdparties/data: new data of subscribed grants")
struct SubscriptionFeedTests {
    /// A person who granted a (new, or the given) party a request for `types`.
    static func subscribe(
        _ api: some APISending, party existing: String? = nil, subscribe: Bool = true, types: [String] = ["heartRate", "location"],
        decision: JSONObject = ["decision": "accept"]
    ) async throws -> (person: String, party: String, request: String) {
        let (person, account) = try await api.individualSession()
        let party = if let existing { existing } else { try await api.thirdPartySession().token }
        let request = try await api.send(
            .post, "/api/thirdparties/requests", token: party,
            json: [
                "fiscalCode": account["fiscalCode"]!, "types": types, "purpose": "Monitoring", "subscribe": subscribe,
            ]
        ).string("id")!
        _ = try await api.send(.put, "/api/users/requests/\(request)", token: person, json: decision)
        return (person, party, request)
    }

    static let upload: [any Sendable] = [
        ["id": "a", "type": "heartRate", "value": 70, "start": "2026-11-20T10:00:00Z"] as JSONObject,
        ["id": "b", "type": "heartRate", "value": 71, "start": "2026-11-20T10:00:01Z"] as JSONObject,
        ["id": "c", "type": "stepCount", "value": 10, "start": "2026-11-20T10:00:00Z", "end": "2026-11-20T10:01:00Z"] as JSONObject,
        ["id": "d", "latitude": 45.0, "longitude": 9.0, "time": "2026-11-20T10:00:00Z"] as JSONObject,
    ]

    @Test func newDataOfGrantedTypesArrivesOnceAndTheCursorResumes() async throws {
        try await TestServer.run { api in
            let (person, party, request) = try await Self.subscribe(api)
            #expect(try await api.send(.get, "/api/thirdparties/data", token: party).items.isEmpty)

            _ = try await api.send(.post, "/api/users/data", token: person, json: ["items": Self.upload])
            _ = try await api.send(.post, "/api/users/data", token: person, json: ["items": Self.upload])  // re-sent: nothing new
            let first = try await api.send(.get, "/api/thirdparties/data", token: party)
            #expect(first.status == .ok)
            let kinds = first.items.map { "\($0["kind"]!):\($0["type"] ?? "-")" }.sorted()
            #expect(kinds == ["location:-", "sample:heartRate", "sample:heartRate"])
            #expect(first.items.allSatisfy { $0["requestId"] as? String == request })
            let cursor = try #require(first.json["nextCursor"] as? String)

            let quiet = try await api.send(.get, "/api/thirdparties/data?cursor=\(cursor)", token: party)
            #expect(quiet.items.isEmpty)
            #expect(quiet.json["nextCursor"] as? String == cursor)

            let later: [any Sendable] = [["type": "heartRate", "value": 90, "start": "2026-11-20T11:00:00Z"] as JSONObject]
            _ = try await api.send(.post, "/api/users/data", token: person, json: ["items": later])
            let next = try await api.send(.get, "/api/thirdparties/data?cursor=\(cursor)", token: party)
            #expect(next.items.compactMap { $0["value"] as? Double } == [90])

            let log = try await api.send(.get, "/api/users/access-log", token: person)
            #expect(log.items.compactMap { $0["itemCount"] as? Int }.reduce(0, +) == 4)
        }
    }

    @Test func onlySubscribedActiveGrantsWithinTheirWindowFeed() async throws {
        try await TestServer.run { api in
            let (person, party, _) = try await Self.subscribe(api, subscribe: false)
            _ = try await api.send(.post, "/api/users/data", token: person, json: ["items": Self.upload])
            #expect(try await api.send(.get, "/api/thirdparties/data", token: party).items.isEmpty)

            let (windowed, windowedParty, _) = try await Self.subscribe(api, decision: ["decision": "accept", "dataFrom": "2026-11-20T10:00:01Z"])
            _ = try await api.send(.post, "/api/users/data", token: windowed, json: ["items": Self.upload])
            let items = try await api.send(.get, "/api/thirdparties/data", token: windowedParty).items
            #expect(items.compactMap { $0["value"] as? Double } == [71])  // the fix and the 10:00:00 sample are before the window

            let (revoker, revokedParty, request) = try await Self.subscribe(api)
            _ = try await api.send(.post, "/api/users/data", token: revoker, json: ["items": Self.upload])
            _ = try await api.send(.post, "/api/users/requests/\(request)/revoke", token: revoker)
            #expect(try await api.send(.get, "/api/thirdparties/data", token: revokedParty).items.isEmpty)
            #expect(try await api.send(.get, "/api/thirdparties/data", token: party).items.isEmpty)
            #expect(try await api.send(.get, "/api/thirdparties/data?cursor=nope", token: party).problemFields == ["cursor"])
        }
    }
}
