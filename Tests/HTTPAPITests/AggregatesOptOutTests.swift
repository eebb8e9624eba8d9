import DatabaseLink
import DatabaseTestSupport
import Foundation
import HTTPAPI
import HTTPTypes
import HealthSharing
import Testing

/// `PATCH /api/users/me {"aggregatesOptOut": true}`: the individual leaves every aggregate
/// query's population from the next query on — read here from the exact population the
/// mechanism adds its noise to — and comes back with false; their own data stays theirs.
@Suite("Aggregates opt-out")
struct AggregatesOptOutTests {
    /// Individuals with steps on 20 November 2026 in the exact (not yet noisy) aggregate.
    static func population(_ database: DatabaseURL) async throws -> Int64 {
        let direct = Database(configuration: database.clientConfiguration(maximumConnections: 1), logger: TestPostgres.logger)
        let query = GroupQuery(
            sampleType: SampleType.stepCount.storageCode, dailyTotal: true, areas: [], ageBands: [], sex: nil, from: "2026-11-20",
            to: "2026-11-20", months: [], addedDays: [], subtractedDays: [], key: .day, lower: 0, upper: 50_000, binWidth: 1_000, binCount: 50,
            resolution: 1)
        return try await direct.whileRunning {
            // Every group released: the population (read from `activity_days`) is the same people.
            let (individuals, population) = try await GroupAggregateStore(database: direct).answer(query) { groups in
                (groups.map(\.individuals).reduce(0, +), Set(groups.map(\.key)))
            }
            #expect(Int64(population.count) == individuals, "one day: each person once")
            return individuals
        }
    }

    @Test func optingOutLeavesTheNextQuerysPopulationAndOptingInComesBack() async throws {
        let database = try await TestPostgres.shared.migratedDatabase()
        try await TestServer.run(database: database) { api in
            let steps: [any Sendable] = [
                ["type": "stepCount", "value": 4_000, "start": "2026-11-20T09:00:00Z", "end": "2026-11-20T10:00:00Z"] as JSONObject
            ]
            let (anna, _) = try await api.individualSession()
            let (bruno, _) = try await api.individualSession()
            for token in [anna, bruno] { _ = try await api.send(.post, "/api/users/data", token: token, json: ["items": steps]) }
            #expect(try await Self.population(database) == 2)
            #expect(try await api.send(.get, "/api/users/me", token: anna).json["aggregatesOptOut"] as? Bool == false)

            let out = try await api.send(.patch, "/api/users/me", token: anna, json: ["aggregatesOptOut": true])
            #expect(out.status == .ok && out.json["aggregatesOptOut"] as? Bool == true)
            #expect(try await Self.population(database) == 1)
            // Anna's own data is hers as before.
            #expect(try await api.send(.get, "/api/users/data?type=stepCount", token: anna).items.count == 1)

            #expect(try await api.send(.patch, "/api/users/me", token: anna, json: ["aggregatesOptOut": false]).status == .ok)
            #expect(try await Self.population(database) == 2)
            // The same from /me: one button out, one back in.
            let (_, carla) = try await api.individualSession()
            let carlaToken = try await api.send(
                .post, "/api/users/login", json: ["email": carla["email"]!, "password": Fixtures.password]
            ).string("token")!
            _ = try await api.send(.post, "/api/users/data", token: carlaToken, json: ["items": steps])
            #expect(try await Self.population(database) == 3)
            var me = try await IndividualPortalTests.signIn(api, carla)
            let page = try await me.send(.get, "/me")
            #expect(PortalBrowser.html(page).contains(#"name="optOut" value="yes""#))
            let csrf = try PortalBrowser.csrf(page)
            #expect(try await me.send(.post, "/me/aggregates", form: [("csrf", csrf), ("optOut", "yes")]).status == .seeOther)
            #expect(try await Self.population(database) == 2)
            #expect(PortalBrowser.html(try await me.send(.get, "/me")).contains(#"name="optOut" value="no""#))
            #expect(try await me.send(.post, "/me/aggregates", form: [("csrf", csrf), ("optOut", "no")]).status == .seeOther)
            #expect(try await Self.population(database) == 3)
            #expect(try await me.send(.post, "/me/aggregates", form: [("optOut", "yes")]).status == .forbidden)  // no form token
            #expect(try await me.send(.post, "/me/aggregates", form: [("csrf", csrf), ("optOut", "maybe")]).status == .unprocessableContent)
            #expect(try await Self.population(database) == 3)

            let bad = try await api.send(.patch, "/api/users/me", token: anna, json: ["aggregatesOptOut": "yes"])
            #expect(bad.status.code >= 400 && bad.status.code < 500 && bad.problemFields == ["aggregatesOptOut"], "\(bad.json)")
        }
    }
}
