import Foundation
import HTTPAPI
import HTTPTypes
import Testing

/// An iPhone and an Apple Watch measure the same minutes: every sample stays, but summaries (and
/// the rollups aggregates read) count one source per minute, by the individual's preference.
@Suite("One source per minute: /api/users/sources")
struct SourcePreferenceTests {
    static let watch = "Anna’s Apple Watch"
    static let phone = "iPhone di Anna"

    static func sample(_ type: String, _ value: Double, _ start: String, end: String? = nil, source: String) -> JSONObject {
        var item: JSONObject = ["type": type, "value": value, "start": start, "source": source]
        if let end { item["end"] = end }
        return item
    }

    /// The phone's ten-minute step count of which the watch covers the first five; heart rate
    /// from both in one minute, and from the phone alone in another.
    static let phoneItems: [any Sendable] = [
        sample("stepCount", 1000, "2026-11-16T08:50:00Z", end: "2026-11-16T09:00:00Z", source: phone),
        sample("heartRate", 90, "2026-11-16T08:50:40Z", source: phone),
        sample("heartRate", 70, "2026-11-16T09:30:00Z", source: phone),
    ]
    static let watchItems: [any Sendable] = [
        sample("stepCount", 600, "2026-11-16T08:50:00Z", end: "2026-11-16T08:55:00Z", source: watch),
        sample("heartRate", 60, "2026-11-16T08:50:10Z", source: watch),
    ]
    static let day = "from=2026-11-16T00:00:00Z&to=2026-11-17T00:00:00Z"

    struct Figures: Equatable {
        var steps: Double?
        var stepSamples: Int?
        var heartRateMean: Double?
        var heartRateSamples: Int?
    }

    static func figures(_ api: APIClient, token: String, bucket: String = "day") async throws -> Figures {
        let window = bucket == "hour" ? "from=2026-11-16T08:00:00Z&to=2026-11-16T10:00:00Z" : day
        let steps = try await api.send(.get, "/api/users/data/summary?type=stepCount&bucket=\(bucket)&\(window)", token: token)
        let rates = try await api.send(.get, "/api/users/data/summary?type=heartRate&bucket=\(bucket)&\(window)", token: token)
        #expect(steps.status == .ok && rates.status == .ok)
        let heartRateSamples = rates.items.compactMap { $0["count"] as? Int }.reduce(0, +)
        let heartRateTotal = rates.items.compactMap { bucket in (bucket["mean"] as? Double).map { $0 * Double(bucket["count"] as? Int ?? 0) } }
        return Figures(
            steps: steps.items.compactMap { $0["sum"] as? Double }.reduce(0, +),
            stepSamples: steps.items.compactMap { $0["count"] as? Int }.reduce(0, +),
            heartRateMean: heartRateSamples == 0 ? nil : (heartRateTotal.reduce(0, +) / Double(heartRateSamples)).rounded(),
            heartRateSamples: heartRateSamples
        )
    }

    @Test func overlappingSourcesCountOnceByDefaultWatchFirst() async throws {
        try await TestServer.run { api in
            let (token, _) = try await api.individualSession()
            // The phone's data arrives first (one source: the fast path), then the watch's (the day is counted again).
            _ = try await api.send(.post, "/api/users/data", token: token, json: ["items": Self.phoneItems])
            #expect(try await Self.figures(api, token: token) == Figures(steps: 1000, stepSamples: 1, heartRateMean: 80, heartRateSamples: 2))
            let upload = try await api.send(.post, "/api/users/data", token: token, json: ["items": Self.watchItems])
            #expect(upload.status == .ok)

            // Steps: the watch's 600, and half the phone's 1000 (its last five minutes are its own).
            // Heart rate: the watch's 60 in the shared minute, the phone's 70 in the other.
            let expected = Figures(steps: 1100, stepSamples: 2, heartRateMean: 65, heartRateSamples: 2)
            #expect(try await Self.figures(api, token: token) == expected)
            #expect(try await Self.figures(api, token: token, bucket: "hour") == expected)
            #expect(try await Self.figures(api, token: token, bucket: "week") == expected)

            // Nothing is dropped from the data itself.
            let listed = try await api.send(.get, "/api/users/data?\(Self.day)", token: token)
            #expect(listed.items.count == 5)

            let sources = try await api.send(.get, "/api/users/sources", token: token)
            #expect(sources.status == .ok)
            #expect(sources.items.compactMap { $0["name"] as? String } == [Self.watch, Self.phone])
            #expect(sources.items.compactMap { $0["rank"] as? Int } == [1, 2])
            #expect(sources.items.compactMap { $0["orderedBy"] as? String } == ["default", "default"])
        }
    }

    @Test func theIndividualsOrderRecountsTheDaysAtOnce() async throws {
        try await TestServer.run { api in
            let (token, _) = try await api.individualSession()
            // Both sources in one upload this time.
            _ = try await api.send(.post, "/api/users/data", token: token, json: ["items": Self.watchItems + Self.phoneItems])
            #expect(try await Self.figures(api, token: token) == Figures(steps: 1100, stepSamples: 2, heartRateMean: 65, heartRateSamples: 2))
            let sources = try await api.send(.get, "/api/users/sources", token: token).items
            let phoneId = try #require(sources.first { $0["name"] as? String == Self.phone }?["id"] as? Int)

            let ordered = try await api.send(.put, "/api/users/sources/order", token: token, json: ["order": [phoneId]])
            #expect(ordered.status == .ok)
            #expect(ordered.items.compactMap { $0["name"] as? String } == [Self.phone, Self.watch])
            #expect(ordered.items.compactMap { $0["orderedBy"] as? String } == ["individual", "default"])
            // The phone covers every minute of the watch's steps now, and has the shared heart-rate minute.
            let phoneFirst = Figures(steps: 1000, stepSamples: 1, heartRateMean: 80, heartRateSamples: 2)
            #expect(try await Self.figures(api, token: token) == phoneFirst)
            #expect(try await Self.figures(api, token: token, bucket: "hour") == phoneFirst)

            // A time-zone change rebuilds the days by the same rule.
            _ = try await api.send(.patch, "/api/users/me", token: token, json: ["timeZone": "Europe/Rome"])
            let rome = try await api.send(
                .get, "/api/users/data/summary?type=stepCount&bucket=day&from=2026-11-15T23:00:00Z&to=2026-11-16T23:00:00Z", token: token)
            #expect(rome.items.compactMap { $0["sum"] as? Double } == [1000])

            // An empty order restores the defaults: the watch first again.
            let restored = try await api.send(.put, "/api/users/sources/order", token: token, json: ["order": [Int]()])
            #expect(restored.items.compactMap { $0["name"] as? String } == [Self.watch, Self.phone])
            let again = try await api.send(
                .get, "/api/users/data/summary?type=stepCount&bucket=day&from=2026-11-15T23:00:00Z&to=2026-11-16T23:00:00Z", token: token)
            #expect(again.items.compactMap { $0["sum"] as? Double } == [1100])
        }
    }

    @Test func anOrderNamesOnlyTheCallersOwnSourcesOnce() async throws {
        try await TestServer.run { api in
            let (token, _) = try await api.individualSession()
            let (other, _) = try await api.individualSession()
            _ = try await api.send(.post, "/api/users/data", token: token, json: ["items": Self.watchItems + Self.phoneItems])
            _ = try await api.send(
                .post, "/api/users/data", token: other, json: ["items": [Self.sample("heartRate", 61, "2026-11-16T08:00:00Z", source: "Pixel 8")]])
            let mine = try await api.send(.get, "/api/users/sources", token: token).items.compactMap { $0["id"] as? Int }
            #expect(mine.count == 2)
            // The other individual sees only their own source, and cannot order mine (ids are per individual: 3 is nobody's).
            #expect(try await api.send(.get, "/api/users/sources", token: other).items.compactMap { $0["name"] as? String } == ["Pixel 8"])
            #expect(try await api.send(.put, "/api/users/sources/order", token: other, json: ["order": [1, 3]]).problemFields == ["order[1]"])

            #expect(
                try await api.send(.put, "/api/users/sources/order", token: token, json: ["order": [mine[0], mine[0]]]).problemFields == ["order[1]"])
            #expect(try await api.send(.put, "/api/users/sources/order", token: token, json: ["order": [0]]).problemFields == ["order[0]"])
            #expect(try await api.send(.put, "/api/users/sources/order", token: token, json: ["order": [70_000]]).problemFields == ["order[0]"])
            #expect(try await api.send(.put, "/api/users/sources/order", token: token, json: [:]).problemFields == ["order"])
            let tooMany = try await api.send(.put, "/api/users/sources/order", token: token, json: ["order": Array(1...100)])
            #expect(tooMany.problemFields == ["order"])
            // Nothing changed by the refusals.
            let after = try await api.send(.get, "/api/users/sources", token: token).items
            #expect(after.compactMap { $0["orderedBy"] as? String } == ["default", "default"])
        }
    }
}
