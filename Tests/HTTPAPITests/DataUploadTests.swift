import Foundation
import HTTPAPI
import HTTPTypes
import HealthSharing
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

    /// A watch's recording as one series: each value at its time, the empty slot skipped, the
    /// refused ones named by index and pointer, and a reading sent both ways stored once.
    @Test func seriesStoreEachValueAtItsTimeAndNameTheRefusedOnes() async throws {
        try await TestServer.run { api in
            let (token, _) = try await api.individualSession()
            let formatter = ISO8601DateFormatter()
            let start = Date().addingTimeInterval(-600).timeIntervalSince1970.rounded(.down)
            let time = { (seconds: Double) in formatter.string(from: Date(timeIntervalSince1970: start + seconds)) }
            let body: JSONObject = [
                "items": [["type": "heartRate", "value": 75, "start": time(3)] as JSONObject],
                "series": [
                    [
                        "type": "heartRate", "unit": "bpm", "start": time(0), "intervalMs": 1000,
                        "values": [70, NSNull(), 400, 75] as [any Sendable], "source": "Watch",
                    ]
                        as JSONObject,
                    ["type": "sleep", "start": time(0), "intervalMs": 60_000, "values": [1, 2]] as JSONObject,
                    ["type": "stepCount", "start": time(0), "intervalMs": 60_000, "values": [12, 30]] as JSONObject,
                ],
            ]
            let reply = try await api.send(.post, "/api/users/data", token: token, json: body)
            #expect(reply.status == .ok)
            // 75 at +3 s is the item and the series' last value: stored once.
            #expect(reply.json["accepted"] as? Int == 4)
            #expect(reply.json["duplicates"] as? Int == 1)
            let rejected = (reply.json["rejected"] as? [[String: Any]]) ?? []
            #expect(rejected.compactMap { $0["index"] as? Int } == [3, 5])
            #expect(rejected.compactMap { $0["pointer"] as? String } == ["/series/0/values/2", "/series/1"])
            #expect((rejected.first?["reason"] as? String) == "heartRate must be between 20 and 250 bpm")

            let hearts = try await api.send(.get, "/api/users/data?type=heartRate&order=asc", token: token).items
            #expect(hearts.compactMap { $0["value"] as? Double } == [70, 75])
            #expect(
                hearts.compactMap { $0["start"] as? String }.compactMap { RFC3339Timestamp.parse($0) }
                    == [start, start + 3].map { Date(timeIntervalSince1970: $0) })
            let steps = try await api.send(.get, "/api/users/data?type=stepCount&order=asc", token: token).items
            #expect(steps.compactMap { $0["value"] as? Double } == [12, 30])
            #expect(steps.last.flatMap { $0["end"] as? String }.flatMap { RFC3339Timestamp.parse($0) } == Date(timeIntervalSince1970: start + 120))

            let again = try await api.send(.post, "/api/users/data", token: token, json: body)
            #expect(again.json["accepted"] as? Int == 0)
            #expect(again.json["duplicates"] as? Int == 5)
        }
    }

    @Test func seriesThatAreNotSeriesStoreNothing() async throws {
        try await TestServer.run { api in
            let (token, _) = try await api.individualSession()
            #expect(try await api.send(.post, "/api/users/data", token: token, json: ["series": [] as [any Sendable]]).problemFields == ["series"])
            #expect(try await api.send(.post, "/api/users/data", token: token, raw: #"{"series": 7}"#).problemFields == ["series"])
            let notObject = try await api.send(.post, "/api/users/data", token: token, raw: #"{"series": [7]}"#)
            #expect(notObject.status == .ok)
            #expect((notObject.json["rejected"] as? [[String: Any]])?.first?["pointer"] as? String == "/series/0")
            // 10,001 readings: 1 item and a series of 10,000.
            let values = Array(repeating: 70, count: 10_000)
            let tooMany: JSONObject = [
                "items": [["type": "heartRate", "value": 70, "start": Self.now] as JSONObject],
                "series": [["type": "heartRate", "start": Self.now, "intervalMs": 1, "values": values] as JSONObject],
            ]
            #expect(try await api.send(.post, "/api/users/data", token: token, json: tooMany).status == .contentTooLarge)
            #expect(try await api.send(.get, "/api/users/data", token: token).items.isEmpty)
        }
    }

    /// 4 MiB of empty items is 1.4 million of them: refused for the cost of counting them, in
    /// the scanner's shape and in the shapes only Foundation's decoder reads (an escape).
    @Test func aBodyOfTooManyReadingsIsRefusedBeforeItIsDecoded() async throws {
        try await TestServer.run { api in
            let (token, _) = try await api.individualSession()
            let empties = Array(repeating: "{}", count: 1_000_000).joined(separator: ",")
            for body in [
                #"{"items":["# + empties + "]}", #"{"\u0069tems":["# + empties + "]}",
                #"{"series":[{"values":[1"# + String(repeating: ",1", count: 10_000) + "]}]}",
            ] {
                #expect(try await api.send(.post, "/api/users/data", token: token, raw: body).status == .contentTooLarge)
            }
            // Past the limit the scanner stops reading: a body broken after its 10,001st reading
            // is too large; one broken before, in a shape only Foundation reads, is malformed.
            #expect(try await api.send(.post, "/api/users/data", token: token, raw: #"{"items":["# + empties + ",]}").status == .contentTooLarge)
            #expect(try await api.send(.post, "/api/users/data", token: token, raw: #"{"\u0069tems":[{}, {}"#).status == .badRequest)
            #expect(try await api.send(.get, "/api/users/data", token: token).items.isEmpty)
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
