import Foundation
import HTTPAPI
import HTTPTypes
import Testing

@Suite("GET /api/users/data and /api/users/data/locations")
struct OwnDataListingTests {
    /// Heart rate every `step` seconds from `first` (UTC), `count` samples.
    static func heartRates(from first: Date, count: Int, step: TimeInterval = 1, value: Double = 70) -> [any Sendable] {
        (0..<count).map { index in
            [
                "type": "heartRate", "value": value + Double(index % 50),
                "start": ISO8601DateFormatter().string(from: first.addingTimeInterval(Double(index) * step)),
            ] as JSONObject
        }
    }

    static func pages(_ api: APIClient, _ token: String, _ query: String) async throws -> [[String: Any]] {
        var items: [[String: Any]] = []
        var cursor: String?
        repeat {
            let path = "/api/users/data?\(query)" + (cursor.map { "&cursor=\($0)" } ?? "")
            let page = try await api.send(.get, path, token: token)
            #expect(page.status == .ok)
            items += page.items
            cursor = page.json["nextCursor"] as? String
        } while cursor != nil
        return items
    }

    @Test func pagesWalkEverySampleOnceInBothOrders() async throws {
        try await TestServer.run { api in
            let (token, _) = try await api.individualSession()
            let first = Date(timeIntervalSince1970: 1_795_000_000)
            _ = try await api.send(.post, "/api/users/data", token: token, json: ["items": Self.heartRates(from: first, count: 300, step: 7)])
            let steps: [any Sendable] = [
                ["type": "stepCount", "value": 500, "start": "2026-11-18T10:00:00Z", "end": "2026-11-18T10:30:00Z"] as JSONObject
            ]
            _ = try await api.send(.post, "/api/users/data", token: token, json: ["items": steps])

            let ascending = try await Self.pages(api, token, "order=asc&limit=37")
            #expect(ascending.count == 301)
            let starts = ascending.compactMap { $0["start"] as? String }
            #expect(starts == starts.sorted())
            let descending = try await Self.pages(api, token, "limit=50")
            #expect(descending.compactMap { $0["start"] as? String } == starts.reversed())

            let heartOnly = try await Self.pages(api, token, "type=heartRate&order=asc&limit=100")
            #expect(heartOnly.count == 300)
            let stepsOnly = try await api.send(.get, "/api/users/data?type=stepCount", token: token)
            #expect(stepsOnly.items.first?["end"] as? String == "2026-11-18T10:30:00.000Z")
            #expect(stepsOnly.items.first?["unit"] as? String == "count")
        }
    }

    /// Newest first, a listing reads month windows back from now (1, 4, 16 months, then the
    /// rest): samples spread over years, pages that end inside and across windows, month ends,
    /// every one seen once, in order, as the oldest-first walk sees them.
    @Test func pagesWalkHistoryOverYearsAcrossTheMonthWindows() async throws {
        try await TestServer.run { api in
            let (token, _) = try await api.individualSession()
            let now = Date()
            // Clusters of samples: the last minutes, around month ends of the past, years back.
            var items: [any Sendable] = Self.heartRates(from: now.addingTimeInterval(-600), count: 9, step: 60)
            for (monthsAgo, count) in [(1, 5), (2, 3), (5, 11), (17, 4), (30, 6), (70, 2)] {
                let month = Calendar(identifier: .gregorian).date(byAdding: .month, value: -monthsAgo, to: now)!
                var utc = Calendar(identifier: .gregorian)
                utc.timeZone = TimeZone(identifier: "UTC")!
                let start = utc.date(from: utc.dateComponents([.year, .month], from: month))!
                // Straddling the first instant of that month: the last seconds of the month before too.
                items += Self.heartRates(from: start.addingTimeInterval(-Double(count / 2) * 30), count: count, step: 30)
            }
            #expect(try await api.send(.post, "/api/users/data", token: token, json: ["items": items]).status == .ok)

            let ascending = try await Self.pages(api, token, "order=asc&limit=4").compactMap { $0["start"] as? String }
            #expect(ascending.count == items.count)
            #expect(ascending == ascending.sorted())
            for limit in [1, 3, 7, 100] {
                let descending = try await Self.pages(api, token, "limit=\(limit)").compactMap { $0["start"] as? String }
                #expect(descending == ascending.reversed(), "limit \(limit)")
            }
            // A window of its own still bounds the walk.
            let from = ascending[ascending.count / 2]
            let bounded = try await Self.pages(api, token, "limit=3&from=\(from)").compactMap { $0["start"] as? String }
            #expect(bounded == ascending.filter { $0 >= from }.reversed())
        }
    }

    @Test func paginationIsStableUnderConcurrentInserts() async throws {
        try await TestServer.run { api in
            let (token, _) = try await api.individualSession()
            let base = Date(timeIntervalSince1970: 1_795_000_000)
            _ = try await api.send(.post, "/api/users/data", token: token, json: ["items": Self.heartRates(from: base, count: 200, step: 10)])
            // Walk oldest first while samples keep arriving, late ones among them (before the cursor)
            // and new ones (after it): every sample present at the start is seen exactly once.
            var seen: [String] = []
            var cursor: String?
            var round = 0
            repeat {
                let path = "/api/users/data?order=asc&limit=25" + (cursor.map { "&cursor=\($0)" } ?? "")
                let page = try await api.send(.get, path, token: token)
                seen += page.items.compactMap { "\($0["start"]!)|\($0["value"]!)" }
                cursor = page.json["nextCursor"] as? String
                round += 1
                let late = Self.heartRates(from: base.addingTimeInterval(5 + Double(round) * 10), count: 1, value: 40)
                let fresh = Self.heartRates(from: base.addingTimeInterval(3000 + Double(round) * 10), count: 1, value: 41)
                _ = try await api.send(.post, "/api/users/data", token: token, json: ["items": late + fresh])
            } while cursor != nil
            #expect(Set(seen).count == seen.count)  // nothing repeated
            let original = Set(
                (0..<200).map { index in
                    let start = base.addingTimeInterval(Double(index) * 10)
                    return "\(Self.millis(start))|\(70 + index % 50)"
                })
            let seenOriginal = Set(seen.filter { !$0.hasSuffix("|40") && !$0.hasSuffix("|41") })
            #expect(seenOriginal == original)  // nothing skipped
        }
    }

    static func millis(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }

    @Test func timeWindowIsHalfOpenAndValidated() async throws {
        try await TestServer.run { api in
            let (token, _) = try await api.individualSession()
            let base = Date(timeIntervalSince1970: 1_795_000_000)  // a whole minute
            _ = try await api.send(.post, "/api/users/data", token: token, json: ["items": Self.heartRates(from: base, count: 120)])
            let from = ISO8601DateFormatter().string(from: base.addingTimeInterval(30))
            let to = ISO8601DateFormatter().string(from: base.addingTimeInterval(90))
            let window = try await Self.pages(api, token, "from=\(from)&to=\(to)&limit=7&order=asc")
            #expect(window.count == 60)
            #expect(window.first?["start"] as? String == Self.millis(base.addingTimeInterval(30)))
            let bad = try await api.send(.get, "/api/users/data?from=\(to)&to=\(from)&order=sideways&limit=5000", token: token)
            #expect(Set(bad.problemFields) == ["to", "order", "limit"])
            let descendingCursor = try await api.send(.get, "/api/users/data?limit=1", token: token).json["nextCursor"] as? String
            let mixed = try await api.send(.get, "/api/users/data?order=asc&cursor=\(descendingCursor!)", token: token)
            #expect(mixed.problemFields == ["cursor"])
        }
    }

    @Test func nobodyElseSeesMyData() async throws {
        try await TestServer.run { api in
            let (owner, _) = try await api.individualSession()
            let (stranger, _) = try await api.individualSession()
            let (party, _) = try await api.thirdPartySession()
            _ = try await api.send(
                .post, "/api/users/data", token: owner, json: ["items": Self.heartRates(from: Date().addingTimeInterval(-600), count: 5)])
            let mine = try await api.send(.get, "/api/users/data?limit=2", token: owner)
            #expect(mine.items.count == 2)
            // Even with my cursor, another individual pages through their own (empty) history.
            let theirs = try await api.send(.get, "/api/users/data?cursor=\(mine.json["nextCursor"] as! String)", token: stranger)
            #expect(theirs.items.isEmpty)
            #expect(try await api.send(.get, "/api/users/data", token: party).status == .forbidden)
        }
    }

    @Test func locationsAreListed() async throws {
        try await TestServer.run { api in
            let (token, _) = try await api.individualSession()
            let fixes: [any Sendable] = (0..<5).map { index in
                ["latitude": 45.0 + Double(index) / 100, "longitude": 9.19, "accuracy": 4, "time": "2026-11-20T10:0\(index):00.125+01:00"]
                    as JSONObject
            }
            _ = try await api.send(.post, "/api/users/data", token: token, json: ["items": fixes])
            let page = try await api.send(.get, "/api/users/data/locations?order=asc&limit=3", token: token)
            #expect(page.items.count == 3)
            #expect(page.items.first?["time"] as? String == "2026-11-20T09:00:00.125Z")
            #expect(page.items.first?["altitude"] == nil)
            let rest = try await api.send(.get, "/api/users/data/locations?order=asc&cursor=\(page.json["nextCursor"] as! String)", token: token)
            #expect(rest.items.compactMap { $0["latitude"] as? Double } == [45.03, 45.04])
            #expect(rest.json["nextCursor"] is NSNull)
        }
    }

    @Test func sourcesAreKeptAndShown() async throws {
        try await TestServer.run { api in
            let (token, _) = try await api.individualSession()
            let items: [any Sendable] = [
                ["type": "heartRate", "value": 60, "start": "2026-11-20T10:00:00Z", "source": "Apple Watch"] as JSONObject,
                ["type": "heartRate", "value": 61, "start": "2026-11-20T10:00:01Z"] as JSONObject,
                ["type": "heartRate", "value": 62, "start": "2026-11-20T10:00:02Z", "source": "Pixel 8"] as JSONObject,
                ["type": "heartRate", "value": 63, "start": "2026-11-20T10:00:03Z", "source": "bad\u{7}name"] as JSONObject,
            ]
            let first = try await api.send(.post, "/api/users/data", token: token, json: ["items": items])
            #expect(first.json["accepted"] as? Int == 3)
            // A later upload into the same minute keeps the earlier samples' sources.
            let more: [any Sendable] = [["type": "heartRate", "value": 64, "start": "2026-11-20T10:00:04Z", "source": "Apple Watch"] as JSONObject]
            _ = try await api.send(.post, "/api/users/data", token: token, json: ["items": more])
            let page = try await api.send(.get, "/api/users/data?order=asc", token: token)
            #expect(page.items.map { $0["source"] as? String } == ["Apple Watch", nil, "Pixel 8", "Apple Watch"])
        }
    }
}
