import Data4HelpCore
import DatabaseLink
import DatabaseTestSupport
import Foundation
import HTTPAPI
import HTTPTypes
import HealthSharing
import PostgresNIO
import Testing

/// The values the server derives — each night's resting heart rate, each workout's analysis —
/// as kinds a third party asks for (read within the grant, never the readings behind them) and
/// aggregates over (migration 0041: kept nights and workouts rolled up per day), and the sweep
/// that keeps them current for people who never look.
@Suite("Derived kinds: restingHeartRate and workoutSummary for third parties")
struct DerivedKindsTests {
    static let night = Date(timeIntervalSince1970: 1_795_046_400)  // 2026-11-19 00:00 UTC

    /// A person with one night (a reading a minute from midnight to six, five minutes at 48) and
    /// a two-minute run; a party granted `types` from 2026-11-18 to 2026-11-21.
    static func grantedPerson(
        _ api: APIClient, database: DatabaseURL, types: [String]
    ) async throws -> (
        person: String, party: String, request: String
    ) {
        let (person, account) = try await api.individualSession(["birthDate": "1986-01-01"])
        let night = (0..<360).map { minute in minute >= 200 && minute < 205 ? 48.0 : 55.0 }
        _ = try await api.send(
            .post, "/api/users/data", token: person, json: ["items": InsightAPITests.readings(from: Self.night, bpm: night, everySeconds: 60)])
        let run = Self.night.addingTimeInterval(10 * 3_600)
        let rise = (0...40).map { 100 + Double($0) }, ease = (1...79).map { 140 - Double($0) * 0.25 }
        _ = try await api.send(.post, "/api/users/data", token: person, json: ["items": InsightAPITests.readings(from: run, bpm: rise + ease)])
        try await OfferTests.sql(
            database,
            """
            INSERT INTO workouts (individual_id, client_id, activity, started_at, ended_at)
            SELECT id, 'run', 'running', to_timestamp(\(Int(run.timeIntervalSince1970))), to_timestamp(\(Int(run.timeIntervalSince1970) + 120))
            FROM individuals WHERE email = '\(account["email"] as? String ?? "")' RETURNING id
            """)
        let (party, _) = try await api.thirdPartySession()
        let body: JSONObject = [
            "fiscalCode": account["fiscalCode"]!, "types": types, "purpose": "Cardiac fitness study",
            "dataFrom": "2026-11-18T00:00:00Z", "dataTo": "2026-11-21T00:00:00Z",
        ]
        let request = try #require(try await api.send(.post, "/api/thirdparties/requests", token: party, json: body).string("id"))
        #expect(try await api.send(.put, "/api/users/requests/\(request)", token: person, json: ["decision": "accept"]).status == .ok)
        return (person, party, request)
    }

    @Test func aPartyReadsTheDerivedKindsItWasGrantedAndNotTheReadings() async throws {
        let database = try await TestPostgres.shared.migratedDatabase()
        try await TestServer.run(database: database) { api in
            let (person, party, request) = try await Self.grantedPerson(api, database: database, types: ["restingHeartRate", "workoutSummary"])
            let base = "/api/thirdparties/requests/\(request)/data"
            let nights = try await api.send(.get, "\(base)/resting-heart-rate?from=2026-11-01T00:00:00Z&to=2026-12-01T00:00:00Z", token: party)
            #expect(nights.status == .ok, "\(nights.json)")
            #expect(nights.items.map { $0["day"] as? String } == ["2026-11-19"] && nights.items.first?["bpm"] as? Double == 48)
            #expect(nights.items.first?["windowStart"] as? String == "2026-11-19T03:20:00.000Z")
            let summaries = try await api.send(.get, "\(base)/workout-summaries", token: party)
            #expect(summaries.status == .ok, "\(summaries.json)")
            let first = try #require(summaries.items.first)
            #expect((first["workout"] as? [String: Any])?["activity"] as? String == "running")
            let analysis = try #require(first["analysis"] as? [String: Any])
            #expect((analysis["profiles"] as? [[String: Any]])?.count == 1 && analysis["readings"] as? Int == 120)
            // Pages of one: the cursor leads from the later workout to the earlier and ends there.
            try await OfferTests.sql(
                database,
                """
                INSERT INTO workouts (individual_id, client_id, activity, started_at, ended_at)
                SELECT individual_id, 'walk', 'walking', started_at + interval '1 hour', ended_at + interval '1 hour' FROM workouts
                WHERE client_id = 'run'
                """)
            let later = try await api.send(.get, "\(base)/workout-summaries?limit=1", token: party)
            #expect(later.items.compactMap { ($0["workout"] as? [String: Any])?["activity"] as? String } == ["walking"])
            let cursor = try #require(later.json["nextCursor"] as? String)
            let earlier = try await api.send(
                .get, "\(base)/workout-summaries?limit=1&cursor=\(cursor.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? cursor)",
                token: party)
            #expect(earlier.items.compactMap { ($0["workout"] as? [String: Any])?["activity"] as? String } == ["running"])
            #expect(earlier.json["nextCursor"] as? String == nil)
            // The readings behind them are not granted.
            #expect(try await api.send(.get, base, token: party).problemFields == ["types"])
            #expect(try await api.send(.get, "\(base)/workouts", token: party).status == .forbidden)
            // Both reads are in the person's log, by kind.
            let log = try await api.send(.get, "/api/users/access-log", token: person)
            #expect(Set(log.items.compactMap { ($0["types"] as? [String])?.first }) == ["restingHeartRate", "workoutSummary"])
            // Bad windows are refused by field; another party's request is not found.
            #expect(try await api.send(.get, "\(base)/resting-heart-rate?from=2026-11-01T00:00:00Z", token: party).problemFields == ["to"])
            #expect(
                try await api.send(.get, "\(base)/resting-heart-rate?from=2026-12-01T00:00:00Z&to=2026-11-01T00:00:00Z", token: party)
                    .problemFields == ["to"])
            let (other, _) = try await api.thirdPartySession()
            #expect(try await api.send(.get, "\(base)/workout-summaries", token: other).status == .notFound)
        }
    }

    @Test func aGrantWithoutThemReadsNeither() async throws {
        let database = try await TestPostgres.shared.migratedDatabase()
        try await TestServer.run(database: database) { api in
            let (_, party, request) = try await Self.grantedPerson(api, database: database, types: ["heartRate", "workout"])
            let base = "/api/thirdparties/requests/\(request)/data"
            let nights = try await api.send(.get, "\(base)/resting-heart-rate?from=2026-11-01T00:00:00Z&to=2026-12-01T00:00:00Z", token: party)
            #expect(nights.status == .forbidden && nights.string("detail")?.contains("restingHeartRate") == true)
            #expect(try await api.send(.get, "\(base)/workout-summaries", token: party).status == .forbidden)
        }
    }

    @Test func theSweepKeepsRecentNightsAndNewWorkoutsForPeopleWhoNeverLook() async throws {
        let database = try await TestPostgres.shared.migratedDatabase()
        try await TestServer.run(database: database) { api in
            let (person, account) = try await api.individualSession()
            let owner = "(SELECT id FROM individuals WHERE email = '\(account["email"] as? String ?? "")')"
            // Last night, a reading a minute from 01:00 to 02:00 (UTC, the person's zone), and a workout.
            // The night of three hours ago: just after midnight, today's 01:00 is still ahead (an
            // upload refuses readings from the future — this test failed between 00:00 and 02:05 UTC).
            var utc = Calendar(identifier: .gregorian)
            utc.timeZone = TimeZone(identifier: "UTC")!
            let today = utc.startOfDay(for: Date().addingTimeInterval(-3 * 3_600))
            let day = today.formatted(.iso8601.year().month().day())
            _ = try await api.send(
                .post, "/api/users/data", token: person,
                json: [
                    "items": InsightAPITests.readings(from: today.addingTimeInterval(3_600), bpm: Array(repeating: 52, count: 61), everySeconds: 60)
                ])
            try await OfferTests.sql(
                database,
                """
                INSERT INTO workouts (individual_id, client_id, activity, started_at, ended_at)
                SELECT \(owner), 'walk', 'walking', now() - interval '2 hours', now() - interval '1 hour' RETURNING id
                """)
            let sweeping = Database(configuration: database.clientConfiguration(maximumConnections: 2), logger: TestPostgres.logger)
            try await sweeping.whileRunning {
                let sweeper = InsightSweeper(database: sweeping, interval: .seconds(300), schemaReady: StartupGate(), logger: TestPostgres.logger)
                let first = try await sweeper.sweep()
                #expect(first.people >= 1 && first.workouts >= 1)
                #expect(
                    try await OfferTests.sql(
                        database,
                        "SELECT value_sum::int8 FROM daily_rollups WHERE individual_id = \(owner) AND sample_type = 13 AND day = '\(day)'::date"
                    ) == 52)
                #expect(
                    try await OfferTests.sql(database, "SELECT count(*) FROM workout_analyses WHERE individual_id = \(owner)") == 1)
                // Nothing new: nothing to do. A new reading last night: that person again.
                #expect(try await sweeper.sweep().people == 0)
                _ = try await api.send(
                    .post, "/api/users/data", token: person,
                    json: ["items": InsightAPITests.readings(from: today.addingTimeInterval(7_200), bpm: [50])])
                #expect(try await sweeper.sweep().people == 1)
            }
        }
    }

    @Test func aggregatesOverTheDerivedKinds() async throws {
        let database = try await TestPostgres.shared.migratedDatabase()
        try await TestServer.run(database: database, configure: { $0.aggregateMinimumGroup = 5 }) { api in
            let seeding = Database(configuration: database.clientConfiguration(maximumConnections: 1), logger: TestPostgres.logger)
            try await seeding.whileRunning {
                try await PopulationSeeder(database: seeding).seed(individuals: 300, days: 30, tag: "derived")
                // Each person's nights at 50–69 bpm (mean 59.5 over everyone), and a 45-minute workout
                // on each of ten days: kept as the sweep would keep them; the triggers roll them up.
                try await seeding.query(
                    """
                    INSERT INTO resting_heart_rates (individual_id, day, fingerprint, bpm, window_start)
                    SELECT i.id, d::date, 'seeded', 50 + i.id % 20, d + interval '3 hours'
                    FROM individuals i CROSS JOIN generate_series(current_date - 29, current_date, interval '1 day') AS d
                    WHERE i.email LIKE 'derived%'
                    """)
                try await seeding.query(
                    """
                    INSERT INTO workouts (individual_id, client_id, activity, started_at, ended_at)
                    SELECT i.id, 'w' || n, 'running', current_date - n + interval '8 hours', current_date - n + interval '8 hours 45 minutes'
                    FROM individuals i CROSS JOIN generate_series(0, 9) AS n
                    WHERE i.email LIKE 'derived%'
                    """)
            }
            let today = Date()
            let day = { (offset: Double) in
                ISO8601DateFormatter.string(from: today.addingTimeInterval(offset * 86_400), timeZone: .gmt, formatOptions: .withFullDate)
            }
            let (party, _) = try await api.thirdPartySession()
            let resting = try await api.send(
                .post, "/api/thirdparties/aggregates", token: party,
                json: ["type": "restingHeartRate", "statistic": "mean", "from": day(-29), "to": day(0), "epsilon": 0.8])
            #expect(resting.status == .created, "\(resting.json)")
            let restingMean = try #require((resting.json["groups"] as? [[String: Any]])?.first?["value"] as? Double)
            // Noise: the centred sum's sensitivity is 45 bpm; at ε = 0.8 (half for the sum) over 300
            // people the mean's error is Laplace with scale 0.38 bpm: beyond 4 once in ~40,000 runs.
            #expect(abs(restingMean - 59.5) < 4, "\(resting.json)")
            let minutes = try await api.send(
                .post, "/api/thirdparties/aggregates", token: party,
                json: ["type": "workoutSummary", "statistic": "mean", "from": day(-29), "to": day(0), "epsilon": 1.0])
            #expect(minutes.status == .created, "\(minutes.json)")
            let minutesMean = try #require((minutes.json["groups"] as? [[String: Any]])?.first?["value"] as? Double)
            // Noise: the centred sum's sensitivity is 150 minutes; at ε = 1 (half for the sum) over 300
            // people the mean's error is Laplace with scale 1 minute: beyond 10 once in ~20,000 runs.
            // Minutes per window day (15) or per workout day summed twice (90) would be far outside.
            #expect(abs(minutesMean - 45) < 10, "\(minutes.json)")
        }
    }
}
