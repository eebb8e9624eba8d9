import Foundation
import HTTPAPI
import HTTPTypes
import Testing

@Suite("A third party reads granted data, and only that")
struct GrantedDataTests {
    /// A person with heart rate, steps and a location fix in early November, and a party whose
    /// request they granted (narrowed as given).
    static func grant(
        _ api: APIClient, decision: JSONObject = ["decision": "accept"], ask: JSONObject = [:]
    )
        async throws -> (person: String, party: String, request: String)
    {
        try await grant(api, decision: { decision }, ask: ask)
    }

    /// The decision is made when the request is answered (for decisions that depend on the time).
    static func grant(
        _ api: APIClient, decision: () -> JSONObject, ask: JSONObject = [:]
    )
        async throws -> (person: String, party: String, request: String)
    {
        let (person, account) = try await api.individualSession()
        let (party, _) = try await api.thirdPartySession()
        let items: [any Sendable] = [
            ["type": "heartRate", "value": 61, "start": "2026-11-01T10:00:00Z"] as JSONObject,
            ["type": "heartRate", "value": 62, "start": "2026-11-05T10:00:00Z"] as JSONObject,
            ["type": "heartRate", "value": 63, "start": "2026-11-09T10:00:00Z"] as JSONObject,
            ["type": "stepCount", "value": 500, "start": "2026-11-05T10:00:00Z", "end": "2026-11-05T10:10:00Z"] as JSONObject,
            ["latitude": 45.1, "longitude": 9.1, "time": "2026-11-05T10:00:00Z"] as JSONObject,
        ]
        _ = try await api.send(.post, "/api/users/data", token: person, json: ["items": items])
        var body: JSONObject = ["fiscalCode": account["fiscalCode"]!, "types": ["heartRate", "location"], "purpose": "Study"]
        body.merge(ask) { $1 }
        let request = try await api.send(.post, "/api/thirdparties/requests", token: party, json: body).string("id")!
        // A decision with an end soon can reach a busy server after that end: refused (it must
        // be in the future), the request stays pending, and the decision is made again.
        var answer = try await api.send(.put, "/api/users/requests/\(request)", token: person, json: decision())
        for _ in 0..<5 where answer.status == .unprocessableContent && answer.problemFields == ["accessUntil"] {
            answer = try await api.send(.put, "/api/users/requests/\(request)", token: person, json: decision())
        }
        return (person, party, request)
    }

    @Test func onlyGrantedTypesWithinTheGrantedWindow() async throws {
        try await TestServer.run { api in
            let (_, party, request) = try await Self.grant(
                api, decision: ["decision": "accept", "dataFrom": "2026-11-03T00:00:00Z"],
                ask: ["dataTo": "2026-11-08T00:00:00Z"]
            )
            let data = try await api.send(.get, "/api/thirdparties/requests/\(request)/data?order=asc", token: party)
            #expect(data.status == .ok)
            #expect(data.items.compactMap { $0["value"] as? Double } == [62])  // not the 1st or 9th, not the steps
            let wider = try await api.send(
                .get, "/api/thirdparties/requests/\(request)/data?from=2026-10-01T00:00:00Z&to=2026-12-01T00:00:00Z", token: party)
            #expect(wider.items.count == 1)
            let steps = try await api.send(.get, "/api/thirdparties/requests/\(request)/data?type=stepCount", token: party)
            #expect(steps.problemFields == ["types"])
            let locations = try await api.send(.get, "/api/thirdparties/requests/\(request)/data/locations", token: party)
            #expect(locations.items.count == 1)
        }
    }

    @Test func revocationStopsReadsAtOnceAndTheLogShowsEveryRead() async throws {
        try await TestServer.run { api in
            let (person, party, request) = try await Self.grant(api)
            #expect(try await api.send(.get, "/api/thirdparties/requests/\(request)/data", token: party).items.count == 3)
            _ = try await api.send(.get, "/api/thirdparties/requests/\(request)/data/locations", token: party)

            let log = try await api.send(.get, "/api/users/access-log", token: person)
            #expect(log.items.count == 2)
            #expect(log.items.compactMap { $0["itemCount"] as? Int }.sorted() == [1, 3])
            #expect(log.items.allSatisfy { $0["channel"] as? String == "pull" && $0["requestId"] as? String == request })

            _ = try await api.send(.post, "/api/users/requests/\(request)/revoke", token: person)
            let after = try await api.send(.get, "/api/thirdparties/requests/\(request)/data", token: party)
            #expect(after.status == .forbidden)
            #expect(after.string("detail")?.contains("revoked") == true)
            #expect(try await api.send(.get, "/api/thirdparties/requests/\(request)/data/locations", token: party).status == .forbidden)
        }
    }

    @Test func grantsEndWhenTheirTimeIsUp() async throws {
        try await TestServer.run { api in
            var until = Date()
            let (_, party, request) = try await Self.grant(
                api,
                decision: {
                    until = Date().addingTimeInterval(8).rounded()
                    return ["decision": "accept", "accessUntil": ISO8601DateFormatter().string(from: until)]
                })
            // Read while the grant surely runs (on a loaded machine the five seconds can be gone).
            if Date() < until.addingTimeInterval(-1) {
                let read = try await api.send(.get, "/api/thirdparties/requests/\(request)/data", token: party)
                if Date() < until { #expect(read.status == .ok) }
            }
            try await Task.sleep(for: .seconds(max(0, until.timeIntervalSinceNow) + 0.5))
            let expired = try await api.send(.get, "/api/thirdparties/requests/\(request)/data", token: party)
            #expect(expired.status == .forbidden)
            #expect(try await api.send(.get, "/api/thirdparties/requests/\(request)", token: party).string("status") == "expired")
        }
    }

    @Test func nothingWithoutAGrantAndNothingForAnotherParty() async throws {
        try await TestServer.run { api in
            let (_, party, request) = try await Self.grant(api, decision: ["decision": "deny"])
            #expect(try await api.send(.get, "/api/thirdparties/requests/\(request)/data", token: party).status == .forbidden)
            let (_, _, granted) = try await Self.grant(api)
            #expect(try await api.send(.get, "/api/thirdparties/requests/\(granted)/data", token: party).status == .notFound)
            let (person, _) = try await api.individualSession()
            #expect(try await api.send(.get, "/api/thirdparties/requests/\(granted)/data", token: person).status == .forbidden)
            #expect(try await api.send(.get, "/api/users/access-log", token: person).items.isEmpty)
        }
    }

    @Test func theExportCarriesConsentsAndDisclosures() async throws {
        try await TestServer.run { api in
            let (person, party, request) = try await Self.grant(api)
            _ = try await api.send(.get, "/api/thirdparties/requests/\(request)/data", token: party)
            let export = try await api.send(.get, "/api/users/export", token: person)
            let kinds = String(decoding: export.data, as: UTF8.self).split(separator: "\n").compactMap {
                ((try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any])?["kind"] as? String
            }
            #expect(kinds.filter { $0 == "request" }.count == 1)
            #expect(kinds.filter { $0 == "disclosure" }.count == 1)
            #expect(kinds.last == "end")
        }
    }
}

extension Date {
    /// Whole seconds up: RFC 3339 without fractions must not end before the intended instant.
    func rounded() -> Date { Date(timeIntervalSince1970: timeIntervalSince1970.rounded(.up)) }
}
