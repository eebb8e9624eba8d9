import Foundation
import HTTPAPI
import HTTPTypes
import Testing

@Suite("GET /api/users/data/summary")
struct SummaryTests {
    static func sample(_ type: String, _ value: Double, _ start: String, end: String? = nil) -> JSONObject {
        var item: JSONObject = ["type": type, "value": value, "start": start]
        if let end { item["end"] = end }
        return item
    }

    @Test func daysAndHoursFollowTheIndividualsTimeZone() async throws {
        try await TestServer.run { api in
            let (token, _) = try await api.individualSession()
            _ = try await api.send(.patch, "/api/users/me", token: token, json: ["timeZone": "Europe/Rome"])
            let items: [any Sendable] = [
                Self.sample("heartRate", 60, "2026-11-15T22:30:00Z"),  // Sunday 23:30 in Rome
                Self.sample("heartRate", 80, "2026-11-15T23:30:00Z"),  // Monday 00:30 in Rome
                Self.sample("heartRate", 100, "2026-11-16T00:10:00Z"),  // Monday 01:10 in Rome
            ]
            _ = try await api.send(.post, "/api/users/data", token: token, json: ["items": items])
            let window = "from=2026-11-10T00:00:00Z&to=2026-11-20T00:00:00Z"

            let days = try await api.send(.get, "/api/users/data/summary?type=heartRate&bucket=day&\(window)", token: token)
            #expect(days.status == .ok)
            #expect(days.string("timeZone") == "Europe/Rome")
            #expect(days.items.compactMap { $0["start"] as? String } == ["2026-11-15T00:00:00+01:00", "2026-11-16T00:00:00+01:00"])
            #expect(days.items.compactMap { $0["count"] as? Int } == [1, 2])
            #expect(days.items.last?["mean"] as? Double == 90)
            #expect(days.items.last?["min"] as? Double == 80)
            #expect(days.items.last?["max"] as? Double == 100)
            #expect(days.items.last?["sum"] == nil)  // no sum for an instant type

            let weeks = try await api.send(.get, "/api/users/data/summary?type=heartRate&bucket=week&\(window)", token: token)
            #expect(weeks.items.compactMap { $0["start"] as? String } == ["2026-11-09T00:00:00+01:00", "2026-11-16T00:00:00+01:00"])
            #expect(weeks.items.compactMap { $0["count"] as? Int } == [1, 2])

            let hours = try await api.send(
                .get, "/api/users/data/summary?type=heartRate&bucket=hour&from=2026-11-15T20:00:00Z&to=2026-11-16T02:00:00Z", token: token)
            #expect(
                hours.items.compactMap { $0["start"] as? String } == [
                    "2026-11-15T23:00:00+01:00", "2026-11-16T00:00:00+01:00", "2026-11-16T01:00:00+01:00",
                ])
        }
    }

    @Test func changingTheTimeZoneRecountsTheDays() async throws {
        try await TestServer.run { api in
            let (token, _) = try await api.individualSession()
            let items: [any Sendable] = [Self.sample("heartRate", 60, "2026-11-16T03:00:00Z")]  // 22:00 on the 15th in New York
            _ = try await api.send(.post, "/api/users/data", token: token, json: ["items": items])
            let query = "/api/users/data/summary?type=heartRate&from=2026-11-10T00:00:00Z&to=2026-11-20T00:00:00Z"
            #expect(try await api.send(.get, query, token: token).items.first?["start"] as? String == "2026-11-16T00:00:00Z")
            _ = try await api.send(.patch, "/api/users/me", token: token, json: ["timeZone": "America/New_York"])
            let after = try await api.send(.get, query, token: token)
            #expect(after.items.first?["start"] as? String == "2026-11-15T00:00:00-05:00")
            #expect(after.items.first?["count"] as? Int == 1)
        }
    }

    @Test func intervalTypesReportTheirSum() async throws {
        try await TestServer.run { api in
            let (token, _) = try await api.individualSession()
            let items: [any Sendable] = [
                Self.sample("stepCount", 1200, "2026-11-16T08:00:00Z", end: "2026-11-16T08:30:00Z"),
                Self.sample("stepCount", 800, "2026-11-16T18:00:00Z", end: "2026-11-16T18:20:00Z"),
            ]
            _ = try await api.send(.post, "/api/users/data", token: token, json: ["items": items])
            let days = try await api.send(
                .get, "/api/users/data/summary?type=stepCount&from=2026-11-16T00:00:00Z&to=2026-11-17T00:00:00Z", token: token)
            #expect(days.items.first?["sum"] as? Double == 2000)
            #expect(days.items.first?["mean"] as? Double == 1000)
        }
    }

    @Test func badSummaryRequestsNameTheField() async throws {
        try await TestServer.run { api in
            let (token, _) = try await api.individualSession()
            #expect(try await api.send(.get, "/api/users/data/summary", token: token).problemFields == ["type"])
            #expect(try await api.send(.get, "/api/users/data/summary?type=sleep", token: token).problemFields == ["type"])
            #expect(try await api.send(.get, "/api/users/data/summary?type=heartRate&bucket=month", token: token).problemFields == ["bucket"])
            let tooLong = try await api.send(
                .get, "/api/users/data/summary?type=heartRate&bucket=hour&from=2026-01-01T00:00:00Z&to=2026-03-01T00:00:00Z", token: token)
            #expect(tooLong.problemFields == ["from"])
        }
    }
}
