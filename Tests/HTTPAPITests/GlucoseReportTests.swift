import Foundation
import HTTPAPI
import HTTPTypes
import Testing

@Suite("GET /api/users/data/glucose: the CGM consensus figures")
struct GlucoseReportTests {
    /// Eight readings five minutes apart from 08:00Z; mean 125, sample SD √(38650 / 7) = 74.31.
    static let values = [50, 60, 100, 150, 200, 260, 65, 115]
    static let window = "from=2026-11-16T00:00:00Z&to=2026-11-17T00:00:00Z"

    static func upload(_ api: APIClient, _ token: String) async throws {
        var items: [any Sendable] = values.enumerated().map { index, value in
            [
                "type": "bloodGlucose", "value": value, "unit": "mg/dL", "start": "2026-11-16T08:\(String(format: "%02d", index * 5)):00Z",
                "source": "Dexcom G7",
            ]
                as JSONObject
        }
        // The same first reading typed in by hand a few seconds later: the sensor, first seen, is preferred.
        items.append(["type": "bloodGlucose", "value": 52, "unit": "mg/dL", "start": "2026-11-16T08:00:20Z", "source": "Manual entry"] as JSONObject)
        let reply = try await api.send(.post, "/api/users/data", token: token, json: ["items": items])
        #expect(reply.json["accepted"] as? Int == 9)
    }

    @Test func figuresMatchTheHandComputedOnes() async throws {
        try await TestServer.run { api in
            let (person, _) = try await api.individualSession()
            try await Self.upload(api, person)

            let report = try await api.send(.get, "/api/users/data/glucose?\(Self.window)", token: person)
            #expect(report.status == .ok)
            let json = report.json
            #expect(json["readings"] as? Int == 8)
            #expect((json["range"] as? [String: Any])?["source"] as? String == "standard")
            #expect(json["mean"] as? Double == 125)
            #expect(json["standardDeviation"] as? Double == 74.3)
            #expect(json["coefficientOfVariation"] as? Double == 59.4)  // 74.31 / 125
            #expect(json["glucoseManagementIndicator"] as? Double == 6.3)  // 3.31 + 0.02392 × 125 = 6.30
            #expect(json["timeVeryLow"] as? Double == 12.5)  // 50
            #expect(json["timeBelowRange"] as? Double == 37.5)  // 50, 60, 65
            #expect(json["timeInRange"] as? Double == 37.5)  // 100, 150, 115
            #expect(json["timeAboveRange"] as? Double == 25)  // 200, 260
            #expect(json["timeVeryHigh"] as? Double == 12.5)  // 260
            #expect(json["hypoEpisodes"] as? Int == 2)  // 50–60, then 65
            #expect(json["firstReading"] as? String == "2026-11-16T08:00:00.000Z" && json["lastReading"] as? String == "2026-11-16T08:35:00.000Z")

            // The individual's own range: asked for, or their glucose rule's.
            let asked = try await api.send(.get, "/api/users/data/glucose?\(Self.window)&low=62&high=166", token: person).json
            #expect(asked["timeBelowRange"] as? Double == 25 && asked["timeInRange"] as? Double == 50 && asked["hypoEpisodes"] as? Int == 1)
            let rule: JSONObject = ["name": "Glucose", "type": "bloodGlucose", "when": "outside", "low": 62, "high": 166, "severity": "warning"]
            #expect(try await api.send(.post, "/api/users/rules", token: person, json: rule).status == .created)
            let ruled = try await api.send(.get, "/api/users/data/glucose?\(Self.window)", token: person).json
            #expect((ruled["range"] as? [String: Any])?["source"] as? String == "rule" && ruled["timeInRange"] as? Double == 50)

            // No readings: zero, and null figures. Another individual sees only their own (none).
            let (other, _) = try await api.individualSession()
            let empty = try await api.send(.get, "/api/users/data/glucose?\(Self.window)", token: other).json
            #expect(empty["readings"] as? Int == 0 && empty["mean"] is NSNull && empty["timeInRange"] is NSNull)
        }
    }

    @Test func badRequestsNameTheField() async throws {
        try await TestServer.run { api in
            let (person, _) = try await api.individualSession()
            #expect(try await api.send(.get, "/api/users/data/glucose?low=70", token: person).problemFields == ["high"])
            #expect(try await api.send(.get, "/api/users/data/glucose?low=180&high=70", token: person).problemFields == ["high"])
            #expect(try await api.send(.get, "/api/users/data/glucose?low=abc&high=180", token: person).problemFields == ["low"])
            #expect(
                try await api.send(.get, "/api/users/data/glucose?from=2026-01-01T00:00:00Z&to=2026-06-01T00:00:00Z", token: person).problemFields
                    == ["from"])
        }
    }
}
