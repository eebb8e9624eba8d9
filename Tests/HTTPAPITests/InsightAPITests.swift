import DatabaseTestSupport
import Foundation
import HTTPTypes
import Testing

/// `GET /api/users/workouts/{id}/analysis` and `GET /api/users/insights` over real uploads: the
/// analysis is computed once and kept, recomputed when a late reading lands in the workout or
/// the person sets a measured maximum; resting heart rate per night, with gaps.
@Suite("Workout analyses and insights over the API")
struct InsightAPITests {
    static func readings(from start: Date, bpm: [Double], everySeconds: Double = 1) -> [any Sendable] {
        bpm.enumerated().map { index, value in
            ["type": "heartRate", "value": value, "start": WireFormatTime.string(start.addingTimeInterval(Double(index) * everySeconds))]
                as JSONObject
        }
    }

    @Test func anAnalysisIsKeptAndRecomputedWhenAReadingLandsLate() async throws {
        let database = try await TestPostgres.shared.migratedDatabase()
        try await TestServer.run(database: database) { api in
            let (person, account) = try await api.individualSession(["birthDate": "1986-01-01"])  // 40 in 2026: maximum 180
            let start = Date(timeIntervalSince1970: 1_795_000_000)
            // Two minutes: a rise from 100 to 140 over 40 s, then 80 s easing down.
            let rise = (0...40).map { 100 + Double($0) }, ease = (1...79).map { 140 - Double($0) * 0.25 }
            _ = try await api.send(.post, "/api/users/data", token: person, json: ["items": Self.readings(from: start, bpm: rise + ease)])
            let email = try #require(account["email"] as? String)
            let workout = try await OfferTests.sql(
                database,
                """
                INSERT INTO workouts (individual_id, client_id, activity, started_at, ended_at)
                SELECT id, 'test', 'running', to_timestamp(1795000000), to_timestamp(1795000120) FROM individuals WHERE email = '\(email)'
                RETURNING id
                """)
            let id = try #require(
                try await api.send(.get, "/api/users/workouts", token: person).items.first?["id"] as? String)
            let first = try await api.send(.get, "/api/users/workouts/\(id)/analysis", token: person)
            #expect(first.status == .ok, "\(first.json)")
            #expect(first.json["maximumHeartRate"] as? Double == 180 && first.json["maximumHeartRateSource"] as? String == "ageEstimate")
            let profiles = try #require(first.json["profiles"] as? [[String: Any]])
            #expect(profiles.count == 1 && profiles.first?["startBpm"] as? Double == 100 && profiles.first?["endBpm"] as? Double == 140)
            #expect((profiles.first?["curve"] as? [Double])?.count == 100)
            let zones = try #require(first.json["zones"] as? [String: Any])
            let seconds = (zones["seconds"] as? [Double] ?? []).reduce(0, +) + (zones["unmeasuredSeconds"] as? Double ?? 0)
            #expect(seconds == 120 && first.json["readings"] as? Int == 120)
            let computedAt =
                "SELECT extract(epoch FROM computed_at)::int8 * 1000000 + extract(microseconds FROM computed_at)::int8 % 1000000 FROM workout_analyses WHERE workout_id = \(workout)"
            let kept = try await OfferTests.sql(database, computedAt)
            // Read again with nothing new: the kept analysis, not recomputed.
            #expect(try await api.send(.get, "/api/users/workouts/\(id)/analysis", token: person).json["readings"] as? Int == 120)
            #expect(try await OfferTests.sql(database, computedAt) == kept)
            // A late reading at the workout's last second: recomputed.
            let late = Self.readings(from: start.addingTimeInterval(120), bpm: [120])
            _ = try await api.send(.post, "/api/users/data", token: person, json: ["items": late])
            #expect(try await api.send(.get, "/api/users/workouts/\(id)/analysis", token: person).json["readings"] as? Int == 121)
            #expect(try await OfferTests.sql(database, computedAt) != kept)
            // A measured maximum: recomputed against it.
            #expect(
                try await api.send(.patch, "/api/users/me", token: person, json: ["maximumHeartRate": 200]).json["maximumHeartRate"] as? Double == 200
            )
            let measured = try await api.send(.get, "/api/users/workouts/\(id)/analysis", token: person)
            #expect(measured.json["maximumHeartRate"] as? Double == 200 && measured.json["maximumHeartRateSource"] as? String == "measured")
            #expect(try await api.send(.patch, "/api/users/me", token: person, json: ["maximumHeartRate": 300]).problemFields == ["maximumHeartRate"])
            #expect(
                try await api.send(.patch, "/api/users/me", token: person, json: ["maximumHeartRate": NSNull()]).json["maximumHeartRate"] is NSNull)

            // The workout's page: the zones, the profile over the curve, the comparison.
            var me = try await IndividualPortalTests.signIn(api, account)
            let page = PortalBrowser.html(try await me.send(.get, "/me/workouts/\(id)"))
            #expect(page.contains(#"id="zone-table""#) && page.contains(#"class="profile-line""#) && page.contains("100 → 140"))
            let insightsPage = try await me.send(.get, "/me/insights")
            #expect(insightsPage.status == .ok && PortalBrowser.html(insightsPage).contains(#"id="trends""#))

            // Nobody else's.
            let (stranger, _) = try await api.individualSession()
            #expect(try await api.send(.get, "/api/users/workouts/\(id)/analysis", token: stranger).status == .notFound)
            #expect(try await api.send(.get, "/api/users/workouts/\(UUID().uuidString)/analysis", token: person).status == .notFound)
        }
    }

    @Test func restingHeartRatePerNightWithGapsAndTheWeeklyLoad() async throws {
        let database = try await TestPostgres.shared.migratedDatabase()
        try await TestServer.run(database: database) { api in
            let (person, account) = try await api.individualSession(["birthDate": "1986-01-01"])  // time zone UTC; maximum 180
            let day = { (offset: Double) in Date(timeIntervalSince1970: 1_795_046_400 + offset * 86_400) }  // 2026-11-19 00:00 UTC
            // Night one: a reading a minute from midnight to six at 55, five minutes at 48.
            let one = (0..<360).map { minute in minute >= 200 && minute < 205 ? 48.0 : 55.0 }
            // Night two: a reading every 20 minutes — nothing holds five minutes.
            let two = Array(repeating: 50.0, count: 18)
            _ = try await api.send(.post, "/api/users/data", token: person, json: ["items": Self.readings(from: day(0), bpm: one, everySeconds: 60)])
            _ = try await api.send(
                .post, "/api/users/data", token: person, json: ["items": Self.readings(from: day(1), bpm: two, everySeconds: 1_200)])
            // A minute's workout at 150 bpm (83 % of 180: zone 4) on the second day, 10:00.
            _ = try await api.send(
                .post, "/api/users/data", token: person, json: ["items": Self.readings(from: day(1.5), bpm: Array(repeating: 150, count: 60))])
            try await OfferTests.sql(
                database,
                """
                INSERT INTO workouts (individual_id, client_id, activity, started_at, ended_at)
                SELECT id, 'w', 'cycling', to_timestamp(\(Int(day(1.5).timeIntervalSince1970))), to_timestamp(\(Int(day(1.5).timeIntervalSince1970) + 60))
                FROM individuals WHERE email = '\(account["email"] as? String ?? "")' RETURNING id
                """)
            let from = WireFormatTime.string(day(0)), to = WireFormatTime.string(day(3))
            let insights = try await api.send(.get, "/api/users/insights?from=\(from)&to=\(to)", token: person)
            #expect(insights.status == .ok, "\(insights.json)")
            let days = try #require(insights.json["restingHeartRate"] as? [[String: Any]])
            #expect(days.map { $0["day"] as? String } == ["2026-11-19", "2026-11-20", "2026-11-21"])
            #expect(days[0]["bpm"] as? Double == 48 && days[1]["bpm"] is NSNull && days[2]["bpm"] is NSNull)
            let trends = try #require(insights.json["trends"] as? [[String: Any]])
            #expect(trends.first?["daysWithValue"] as? Int == 1 && trends.first?["mean"] as? Double == 48)
            let weeks = try #require(insights.json["weeklyLoad"] as? [[String: Any]])
            #expect(weeks.count == 1 && weeks.first?["week"] as? String == "2026-11-16" && weeks.first?["workouts"] as? Int == 1)
            #expect(weeks.first?["zoneSeconds"] as? [Double] == [0, 0, 0, 60, 0])
            #expect(try await api.send(.get, "/api/users/insights?from=\(to)&to=\(from)", token: person).problemFields == ["to"])
            let long = WireFormatTime.string(day(-500))
            #expect(try await api.send(.get, "/api/users/insights?from=\(long)&to=\(to)", token: person).problemFields == ["from"])

            // Kept: every night of the window, and each value as the day's restingHeartRate rollup
            // (type 13); the workout as the day's workoutSummary rollup (type 14: 1 workout, 1 minute).
            let email = account["email"] as? String ?? ""
            let owner = "(SELECT id FROM individuals WHERE email = '\(email)')"
            #expect(try await OfferTests.sql(database, "SELECT count(*) FROM resting_heart_rates WHERE individual_id = \(owner)") == 3)
            let rolled = "SELECT coalesce(sum(value_sum), -1)::int8 FROM daily_rollups WHERE individual_id = \(owner) AND sample_type = 13"
            #expect(try await OfferTests.sql(database, rolled) == 48)
            #expect(
                try await OfferTests.sql(
                    database,
                    "SELECT sample_count * 100 + value_sum::int8 FROM daily_rollups WHERE individual_id = \(owner) AND sample_type = 14 AND day = '2026-11-20'"
                ) == 101)
            let computed = "SELECT computed_at FROM resting_heart_rates WHERE individual_id = \(owner) AND day = '2026-11-19'"
            let computedAt = { try await OfferTests.text(database, computed) }
            let keptAt = try await computedAt()
            // Late readings fill night two (a reading a minute from 02:00 to 02:10 at 45): that night is
            // computed again, night one is kept as it was.
            _ = try await api.send(
                .post, "/api/users/data", token: person,
                json: ["items": Self.readings(from: day(1).addingTimeInterval(7_200), bpm: Array(repeating: 45, count: 11), everySeconds: 60)])
            let again = try await api.send(.get, "/api/users/insights?from=\(from)&to=\(to)", token: person)
            let nights = try #require(again.json["restingHeartRate"] as? [[String: Any]])
            #expect(nights[0]["bpm"] as? Double == 48 && nights[1]["bpm"] as? Double == 45 && nights[2]["bpm"] is NSNull)
            #expect(try await computedAt() == keptAt)
            #expect(try await OfferTests.sql(database, rolled) == 93)
            // A new time zone moves every night: the kept ones are forgotten, the workouts counted again.
            #expect(try await api.send(.patch, "/api/users/me", token: person, json: ["timeZone": "Asia/Tokyo"]).status == .ok)
            #expect(try await OfferTests.sql(database, "SELECT count(*) FROM resting_heart_rates WHERE individual_id = \(owner)") == 0)
            #expect(
                try await OfferTests.sql(
                    database, "SELECT count(*) FROM daily_rollups WHERE individual_id = \(owner) AND sample_type = 14 AND day = '2026-11-20'") == 1)
        }
    }
}
