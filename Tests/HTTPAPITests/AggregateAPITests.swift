import DatabaseLink
import DatabaseTestSupport
import Foundation
import HTTPAPI
import HTTPTypes
import HealthSharing
import PostgresNIO
import Testing

@Suite("POST /api/thirdparties/aggregates: the query grammar, answers, repeats, budget")
struct AggregateAPITests {
    static let base: JSONObject = ["type": "heartRate", "statistic": "mean", "from": "2026-01-01", "to": "2026-01-31"]

    static func with(_ changes: JSONObject) -> JSONObject { base.merging(changes) { $1 } }

    @Test func anythingOutsideTheGrammarIsRefusedByField() async throws {
        try await TestServer.run { api in
            let (party, _) = try await api.thirdPartySession()
            let cases: [(JSONObject, [String])] = [
                (Self.with(["polygon": [[9.1, 45.4], [9.2, 45.5]]]), ["polygon"]),
                (Self.with(["statistic": "max"]), ["statistic"]),
                (Self.with(["from": "2025-01-01", "to": "2026-01-01"]), ["to"]),  // 366 days
                (Self.with(["groupBy": "day", "from": "2026-01-01", "to": "2026-02-20"]), ["groupBy"]),  // 51 groups
                (Self.with(["epsilon": 1.5]), ["epsilon"]),
                (Self.with(["epsilon": 0.125]), ["epsilon"]),
                (Self.with(["type": "sleep"]), ["type"]),
                (Self.with(["ageBands": ["70-75"]]), ["ageBands"]),
                (Self.with(["areas": ["Milano"]]), ["areas"]),
                (Self.with(["groupBy": "area"]), ["areas"]),
                (Self.with(["to": "2025-12-31"]), ["to"]),
                (Self.with(["from": "2026-02-30"]), ["from"]),
                (["statistic": "count", "radiusMeters": 500], ["radiusMeters", "type", "from", "to"]),
            ]
            for (body, fields) in cases {
                let reply = try await api.send(.post, "/api/thirdparties/aggregates", token: party, json: body)
                #expect(reply.status == .unprocessableContent, "\(body)")
                #expect(reply.problemFields.sorted() == fields.sorted(), "\(body)")
            }
            #expect(try await api.send(.get, "/api/thirdparties/budget", token: party).json["day"] != nil)
        }
    }

    @Test func answersRepeatsBudgetAndTenancy() async throws {
        let database = try await TestPostgres.shared.migratedDatabase()
        try await TestServer.run(database: database, configure: { $0.aggregateMinimumGroup = 5 }) { api in
            let seeding = Database(configuration: database.clientConfiguration(maximumConnections: 1), logger: TestPostgres.logger)
            try await seeding.whileRunning { try await PopulationSeeder(database: seeding).seed(individuals: 400, days: 60, tag: "api") }
            let today = Date()
            let from = ISO8601DateFormatter.string(from: today.addingTimeInterval(-29 * 86_400), timeZone: .gmt, formatOptions: .withFullDate)
            let to = ISO8601DateFormatter.string(from: today, timeZone: .gmt, formatOptions: .withFullDate)
            let spec: JSONObject = ["type": "stepCount", "statistic": "mean", "from": from, "to": to, "groupBy": "sex", "epsilon": 0.6]
            let (party, _) = try await api.thirdPartySession()

            let first = try await api.send(.post, "/api/thirdparties/aggregates", token: party, json: spec)
            #expect(first.status == .created)
            #expect(first.string("status") == "answered" && first.json["repeated"] as? Bool == false)
            let groups = (first.json["groups"] as? [[String: Any]]) ?? []
            #expect(
                !groups.isEmpty
                    && groups.allSatisfy {
                        ($0["key"] as? [String: String])?["sex"] != nil && $0["value"] is Double && ($0["interval"] as? [Double])?.count == 2
                    })
            let id = try #require(first.string("id"))

            let again = try await api.send(.post, "/api/thirdparties/aggregates", token: party, json: spec)
            #expect(again.status == .ok && again.json["repeated"] as? Bool == true && again.string("id") == id)
            #expect((again.json["groups"] as? [[String: Any]])?.count == groups.count)
            #expect(try await api.send(.get, "/api/thirdparties/aggregates/\(id)", token: party).string("id") == id)
            #expect(try await api.send(.get, "/api/thirdparties/aggregates", token: party).items.count == 1)

            let budget = try await api.send(.get, "/api/thirdparties/budget", token: party).json
            #expect((budget["day"] as? [String: Any])?["spent"] as? Double == 0.6)

            // The day's 2.0: 0.6 spent, 1.0 more fits, then 0.5 does not.
            let second = try await api.send(.post, "/api/thirdparties/aggregates", token: party, json: spec.merging(["epsilon": 1.0]) { $1 })
            #expect(second.status == .created)
            let refused = try await api.send(.post, "/api/thirdparties/aggregates", token: party, json: spec.merging(["epsilon": 0.5]) { $1 })
            #expect(refused.status == .tooManyRequests)
            #expect(refused.headers[.retryAfter].flatMap(Int.init).map { $0 > 0 && $0 <= 86_400 } == true)

            let (other, _) = try await api.thirdPartySession()
            #expect(try await api.send(.get, "/api/thirdparties/aggregates/\(id)", token: other).status == .notFound)
            #expect(try await api.send(.get, "/api/thirdparties/aggregates", token: other).items.isEmpty)
            let (person, _) = try await api.individualSession()
            #expect(try await api.send(.post, "/api/thirdparties/aggregates", token: person, json: spec).status == .forbidden)
        }
    }
}

@Suite("Aggregate subscriptions: recomputed each period, delivered as events, stopped by the budget")
struct AggregateSubscriptionTests {
    @Test(.timeLimit(.minutes(20))) func recomputedDeliveredAndStoppedWhenTheBudgetRunsOut() async throws {
        let database = try await TestPostgres.shared.migratedDatabase()
        let receivers = [try WebhookReceiver(), try WebhookReceiver()]
        let listening = receivers.map { $0.start() }
        defer { listening.forEach { $0.cancel() } }
        try await TestServer.run(
            database: database,
            configure: { configuration in
                configuration.aggregateMinimumGroup = 5
                configuration.aggregateSubscriptionSweep = .seconds(1)
                configuration.privacyBudget.perDay = Epsilon(hundredths: 150)
                WebhookTests.localDelivery(&configuration)
            }
        ) { api in
            let direct = Database(configuration: database.clientConfiguration(maximumConnections: 1), logger: TestPostgres.logger)
            try await direct.whileRunning { try await PopulationSeeder(database: direct).seed(individuals: 300, days: 40, tag: "sub") }
            let to = ISO8601DateFormatter.string(from: Date(), timeZone: .gmt, formatOptions: .withFullDate)
            let from = ISO8601DateFormatter.string(from: Date().addingTimeInterval(-13 * 86_400), timeZone: .gmt, formatOptions: .withFullDate)
            var subscribed: [(party: String, aggregate: String)] = []
            for (index, epsilon) in [0.5, 1.0].enumerated() {
                let (party, _) = try await api.thirdPartySession()
                _ = try await WebhookTests.register(api, party, receivers[index].url)
                let answer = try await api.send(
                    .post, "/api/thirdparties/aggregates", token: party,
                    json: [
                        "type": "heartRate", "statistic": "mean", "from": from, "to": to, "epsilon": epsilon,
                    ])
                #expect(answer.status == .created && answer.string("status") == "answered")
                let aggregate = try #require(answer.string("id"))
                let subscription = try await api.send(
                    .post, "/api/thirdparties/aggregates/\(aggregate)/subscription", token: party, json: ["period": "daily"])
                #expect(subscription.status == .created && subscription.string("status") == "active" && subscription.string("nextRunAt") != nil)
                subscribed.append((party, aggregate))
            }
            // Make both due now (instead of after the next midnight).
            let again = Database(configuration: database.clientConfiguration(maximumConnections: 1), logger: TestPostgres.logger)
            try await again.whileRunning { try await again.query("UPDATE aggregate_subscriptions SET next_run_at = now()") }

            // The first party's budget covers the recomputation (0.5 + 0.5 ≤ 1.5): an aggregate.updated arrives.
            try await receivers[0].wait { $0.contains { $0.type == "aggregate.updated" } }
            let updated = try #require(receivers[0].received.first { $0.type == "aggregate.updated" })
            let aggregate = try #require((updated.json["data"] as? [String: Any])?["aggregate"] as? [String: Any])
            #expect(aggregate["status"] as? String == "answered" && aggregate["id"] as? String != subscribed[0].aggregate)
            let first = try await api.send(.get, "/api/thirdparties/aggregates/\(subscribed[0].aggregate)/subscription", token: subscribed[0].party)
            #expect(
                first.json["runs"] as? Int == 1 && first.string("lastAggregateId") == aggregate["id"] as? String && first.string("status") == "active"
            )

            // The second's does not (1.0 + 1.0 > 1.5): the subscription stops and says so.
            try await receivers[1].wait { $0.contains { $0.type == "aggregate.stopped" } }
            let second = try await api.send(.get, "/api/thirdparties/aggregates/\(subscribed[1].aggregate)/subscription", token: subscribed[1].party)
            #expect(second.string("status") == "stopped" && second.string("stoppedReason") == "privacy budget exhausted")

            // Only the owner sees or ends a subscription.
            #expect(
                try await api.send(.get, "/api/thirdparties/aggregates/\(subscribed[0].aggregate)/subscription", token: subscribed[1].party).status
                    == .notFound)
            #expect(
                try await api.send(.delete, "/api/thirdparties/aggregates/\(subscribed[0].aggregate)/subscription", token: subscribed[0].party).status
                    == .noContent)
            let ended = try await api.send(.get, "/api/thirdparties/aggregates/\(subscribed[0].aggregate)/subscription", token: subscribed[0].party)
            #expect(ended.string("status") == "stopped")
        }
    }
}
