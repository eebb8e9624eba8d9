import Foundation
import HTTPAPI
import HTTPTypes
import Testing

typealias JSONObject = [String: any Sendable]

@Suite("POST /api/users/data")
struct DataUploadTests {
    static let now = ISO8601DateFormatter().string(from: Date().addingTimeInterval(-60))

    @Test func mixedBatchKeepsTheValidItemsAndNamesTheRest() async throws {
        try await TestServer.run { api in
            let (token, _) = try await api.individualSession()
            let items: [any Sendable] = [
                ["type": "heartRate", "value": 72, "unit": "bpm", "start": Self.now, "id": "hr-1"] as JSONObject,
                ["type": "heartRate", "value": 400, "start": Self.now] as JSONObject,
                ["type": "bloodGlucose", "value": 5.5, "unit": "mmol/L", "start": Self.now] as JSONObject,
                ["type": "bloodGlucose", "value": 5.5, "unit": "mg", "start": Self.now] as JSONObject,
                ["type": "sleep", "value": "deep", "start": "2026-01-01T00:00:00Z", "end": "2026-01-01T01:00:00Z"] as JSONObject,
                ["latitude": 45.46, "longitude": 9.19, "time": Self.now] as JSONObject,
                ["latitude": "north"] as JSONObject,
                "not an object",
            ]
            let reply = try await api.send(.post, "/api/users/data", token: token, json: ["items": items])
            #expect(reply.status == .ok)
            #expect(reply.json["accepted"] as? Int == 4)
            #expect(reply.json["duplicates"] as? Int == 0)
            let rejected = (reply.json["rejected"] as? [[String: Any]]) ?? []
            #expect(rejected.compactMap { $0["index"] as? Int } == [1, 3, 6, 7])
            #expect(rejected.allSatisfy { ($0["reason"] as? String)?.isEmpty == false })

            let again = try await api.send(.post, "/api/users/data", token: token, json: ["items": items])
            #expect(again.json["accepted"] as? Int == 0)
            #expect(again.json["duplicates"] as? Int == 4)
        }
    }

    @Test func bodyThatIsNotABatchStoresNothing() async throws {
        try await TestServer.run { api in
            let (token, _) = try await api.individualSession()
            #expect(try await api.send(.post, "/api/users/data", token: token, json: ["items": [] as [any Sendable]]).problemFields == ["items"])
            #expect(try await api.send(.post, "/api/users/data", token: token, json: ["samples": [1]]).problemFields == ["items"])
            #expect(try await api.send(.post, "/api/users/data", token: token, raw: "[]").status == .unprocessableContent)
            #expect(try await api.send(.post, "/api/users/data", token: token, raw: "{\"items\": [").status == .badRequest)
            let tooMany = (0...10_000).map { _ in ["type": "heartRate"] as [String: any Sendable] }
            let reply = try await api.send(.post, "/api/users/data", token: token, json: ["items": tooMany])
            #expect(reply.status == .contentTooLarge)
        }
    }

    @Test func onlyIndividualsUploadAndOnlyForThemselves() async throws {
        try await TestServer.run { api in
            let (party, _) = try await api.thirdPartySession()
            let body: JSONObject = ["items": [["type": "heartRate", "value": 70, "start": Self.now] as JSONObject]]
            #expect(try await api.send(.post, "/api/users/data", json: body).status == .unauthorized)
            #expect(try await api.send(.post, "/api/users/data", token: party, json: body).status == .forbidden)
        }
    }
}
