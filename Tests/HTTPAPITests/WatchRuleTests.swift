import DatabaseTestSupport
import Foundation
import HTTPAPI
import HTTPTypes
import Testing

@Suite("Watch rules and alerts: /api/users/rules, /api/users/alerts")
struct WatchRuleTests {
    static func glucose(_ values: [Int], from start: Date, tag: String) -> JSONObject {
        let items: [any Sendable] = values.enumerated().map { index, value in
            [
                "type": "bloodGlucose", "value": value, "unit": "mg/dL", "start": SOSIncidentTests.time(start.addingTimeInterval(Double(index * 60))),
                "id": "\(tag)-\(index)",
            ] as JSONObject
        }
        return ["items": items]
    }

    static let glucoseRule: JSONObject = [
        "name": "Glucose", "type": "bloodGlucose", "when": "outside", "low": 70, "high": 180, "severity": "warning", "throttleMinutes": 0,
    ]

    static func alerts(_ api: APIClient, _ token: String) async throws -> [[String: Any]] {
        try await api.send(.get, "/api/users/alerts", token: token).items
    }

    @Test func rulesAreTheIndividualsAndRefusedFieldByField() async throws {
        try await TestServer.run { api in
            let (person, _) = try await api.individualSession()
            let (other, _) = try await api.individualSession()
            let created = try await api.send(
                .post, "/api/users/rules", token: person,
                json: [
                    "name": "Night lows", "type": "heartRate", "when": "below", "value": 45, "over": "sustained", "minutes": 20,
                    "activeHours": ["from": "22:00", "to": "07:00"] as JSONObject, "severity": "warning",
                ])
            #expect(created.status == .created)
            let id = try #require(created.string("id"))
            #expect(created.headers[.location] == "/api/users/rules/\(id)")
            #expect(created.string("condition") == "heart rate below 45 bpm for 20 minutes")
            #expect((created.json["activeHours"] as? [String: Any])?["from"] as? String == "22:00")
            #expect(created.json["throttleMinutes"] as? Int == 360 && created.json["enabled"] as? Bool == true)

            // PATCH changes only what it names; null active hours removes them.
            let patched = try await api.send(.patch, "/api/users/rules/\(id)", token: person, json: ["value": 40, "activeHours": NSNull()])
            #expect(patched.status == .ok)
            #expect(patched.string("condition") == "heart rate below 40 bpm for 20 minutes" && patched.json["activeHours"] is NSNull)
            #expect(patched.string("name") == "Night lows")

            // Another individual's rule does not exist for them.
            #expect(try await api.send(.get, "/api/users/rules/\(id)", token: other).status == .notFound)
            #expect(try await api.send(.patch, "/api/users/rules/\(id)", token: other, json: ["value": 41]).status == .notFound)
            #expect(try await api.send(.delete, "/api/users/rules/\(id)", token: other).status == .notFound)
            #expect(try await api.send(.get, "/api/users/rules", token: other).items.isEmpty)

            // Refusals name their fields.
            let refusals: [(JSONObject, [String])] = [
                ([:], ["name", "type", "severity"]),
                (["name": "x", "type": "sleep", "when": "below", "value": 1, "severity": "info"], ["type"]),
                (["name": "x", "type": "heartRate", "when": "below", "value": 400, "severity": "info"], ["value"]),
                (["name": "x", "type": "heartRate", "when": "between", "value": 40, "severity": "info"], ["when"]),
                (["name": "x", "type": "bloodGlucose", "when": "outside", "low": 180, "high": 70, "severity": "info"], ["high"]),
                (["name": "x", "type": "heartRate", "when": "below", "value": 40, "over": "sustained", "severity": "info"], ["minutes"]),
                (
                    ["name": "x", "type": "heartRate", "when": "below", "value": 40, "over": "consecutive", "readings": 0, "severity": "info"],
                    ["readings"]
                ),
                (["name": "x", "type": "heartRate", "when": "below", "value": 40, "severity": "emergency"], ["severity"]),
                (
                    [
                        "name": "x", "type": "heartRate", "when": "below", "value": 40, "severity": "info",
                        "activeHours": ["from": "25:00", "to": "07:00"] as JSONObject,
                    ],
                    ["activeHours.from"]
                ),
            ]
            for (body, fields) in refusals {
                let reply = try await api.send(.post, "/api/users/rules", token: person, json: body)
                #expect(reply.status == .unprocessableContent && reply.problemFields.sorted() == fields.sorted(), "\(body)")
            }
            let emergency = try await api.send(
                .post, "/api/users/rules", token: person,
                json: ["name": "x", "type": "heartRate", "when": "below", "value": 40, "severity": "emergency"])
            #expect(String(decoding: emergency.data, as: UTF8.self).contains("PUT /api/users/sos"))

            #expect(try await api.send(.get, "/api/users/rules", token: person).items.count == 1)
            #expect(try await api.send(.delete, "/api/users/rules/\(id)", token: person).status == .noContent)
            #expect(try await api.send(.get, "/api/users/rules/\(id)", token: person).status == .notFound)
        }
    }

    @Test func templatesAreAdoptedInOneCall() async throws {
        try await TestServer.run { api in
            let (person, _) = try await api.individualSession()
            let templates = try await api.send(.get, "/api/users/rule-templates", token: person).items
            #expect(
                templates.compactMap { $0["id"] as? String } == [
                    "lowHeartRate", "glucoseOutOfRange", "glucoseSevere", "lowOxygenSaturation", "automatedSOS",
                ])
            // Every field of the rule is there, null when it does not apply.
            #expect((templates.first?["rule"] as? [String: Any])?["low"] is NSNull)
            let adopted = try await api.send(.post, "/api/users/rule-templates/lowHeartRate/adopt", token: person)
            #expect(adopted.status == .created)
            #expect(adopted.string("template") == "lowHeartRate" && adopted.string("condition") == "heart rate below 40 bpm for 20 minutes")
            #expect(try await api.send(.post, "/api/users/rule-templates/nothing/adopt", token: person).status == .notFound)
        }
    }

    /// The design's AutomatedSOS rule is a template too: adopting it enrols me in AutomatedSOS with
    /// its thresholds, keeps what I had set there, and then three low readings open an incident.
    @Test func adoptingTheAutomatedSOSTemplateEnrolsMe() async throws {
        try await TestServer.run { api in
            let (person, _) = try await api.individualSession()
            let template = try await api.send(.get, "/api/users/rule-templates", token: person).items.first { $0["id"] as? String == "automatedSOS" }
            let rule = try #require(template?["rule"] as? [String: Any])
            #expect(rule["severity"] as? String == "emergency" && rule["when"] as? String == "below" && rule["value"] as? Double == 40)
            #expect(rule["over"] as? String == "consecutive" && rule["readings"] as? Int == 3)

            // Not enrolled yet, with a contact and a higher threshold set.
            let contact: JSONObject = ["name": "Ada Lovelace", "phone": "+39 333 1234567"]
            let set = try await api.send(
                .put, "/api/users/sos", token: person,
                json: ["enabled": false, "minHeartRate": 45, "consecutiveReadings": 5, "cancelWindowSeconds": 0, "contacts": [contact]])
            #expect(set.status == .ok)
            let adopted = try await api.send(.post, "/api/users/rule-templates/automatedSOS/adopt", token: person)
            #expect(adopted.status == .ok && adopted.headers[.contentLocation] == "/api/users/sos")
            #expect(adopted.json["enabled"] as? Bool == true && adopted.json["minHeartRate"] as? Double == 40)
            #expect(adopted.json["consecutiveReadings"] as? Int == 3 && adopted.json["cancelWindowSeconds"] as? Int == 0)
            #expect((adopted.json["contacts"] as? [[String: Any]])?.first?["phone"] as? String == "+393331234567")
            let settings = try await api.send(.get, "/api/users/sos", token: person)
            #expect(settings.json["enabled"] as? Bool == true && settings.json["minHeartRate"] as? Double == 40)
            #expect(try await api.send(.get, "/api/users/rules", token: person).items.isEmpty)  // no rule of mine: it is AutomatedSOS

            try await SOSIncidentTests.upload(api, person, SOSIncidentTests.heartRates([30, 30, 30], from: Date().addingTimeInterval(-5)))
            #expect(try await SOSIncidentTests.incidents(api, person).count == 1)

            // Someone who never set anything is enrolled with the defaults' cancel window.
            let (newcomer, _) = try await api.individualSession()
            let first = try await api.send(.post, "/api/users/rule-templates/automatedSOS/adopt", token: newcomer)
            #expect(first.status == .ok && first.json["enabled"] as? Bool == true && first.json["cancelWindowSeconds"] as? Int == 3)
        }
    }

    @Test func anEpisodeRaisesOneAlertToTheDeviceAndGrowsWhileItLasts() async throws {
        let device = try WebhookReceiver()
        let listening = device.start()
        defer { listening.cancel() }
        try await TestServer.run(configure: WebhookTests.localDelivery) { api in
            let (person, _) = try await api.individualSession()
            let secret = try await WebhookTests.register(api, person, device.url, path: "/api/users/notifications")
            #expect(try await api.send(.post, "/api/users/rules", token: person, json: Self.glucoseRule).status == .created)
            let now = Date()

            // Yesterday's readings (a late sync) never alert.
            try await SOSIncidentTests.upload(api, person, Self.glucose([50, 45], from: now.addingTimeInterval(-86_400), tag: "old"))
            #expect(try await Self.alerts(api, person).isEmpty)

            // A low reading now raises an alert, and the device is told once, signed.
            try await SOSIncidentTests.upload(api, person, Self.glucose([60], from: now.addingTimeInterval(-180), tag: "a"))
            var alerts = try await Self.alerts(api, person)
            #expect(alerts.count == 1)
            #expect(
                alerts.first?["condition"] as? String == "blood glucose outside 70–180 mg/dL" && alerts.first?["severity"] as? String == "warning")
            try await device.wait { $0.contains { $0.type == "alert.raised" } }
            let told = try #require(device.received.first { $0.type == "alert.raised" })
            #expect(WebhookReceiver.verify(told, secret: secret))
            #expect((told.json["data"] as? [String: Any])?["alertId"] as? String == alerts.first?["id"] as? String)

            // The next low reading of the same episode extends it: still one alert, no second message.
            try await SOSIncidentTests.upload(api, person, Self.glucose([55], from: now.addingTimeInterval(-120), tag: "b"))
            alerts = try await Self.alerts(api, person)
            #expect(alerts.count == 1)
            let id = try #require(alerts.first?["id"] as? String)
            let detail = try await api.send(.get, "/api/users/alerts/\(id)", token: person)
            #expect((detail.json["readings"] as? [[String: Any]])?.compactMap { $0["value"] as? Double } == [60, 55])

            // A normal reading ends the episode; the next high one is a new episode (no throttle here).
            try await SOSIncidentTests.upload(api, person, Self.glucose([110, 250], from: now.addingTimeInterval(-60), tag: "c"))
            alerts = try await Self.alerts(api, person)
            #expect(alerts.count == 2)
            try await device.wait { $0.filter { $0.type == "alert.raised" }.count == 2 }

            // Acknowledged once; another individual cannot see or acknowledge it.
            let (other, _) = try await api.individualSession()
            #expect(try await api.send(.get, "/api/users/alerts/\(id)", token: other).status == .notFound)
            #expect(try await api.send(.post, "/api/users/alerts/\(id)/acknowledge", token: other).status == .notFound)
            let acknowledged = try await api.send(.post, "/api/users/alerts/\(id)/acknowledge", token: person)
            #expect(acknowledged.status == .ok && acknowledged.string("acknowledgedAt") != nil)
            let again = try await api.send(.post, "/api/users/alerts/\(id)/acknowledge", token: person)
            #expect(again.string("acknowledgedAt") == acknowledged.string("acknowledgedAt"))
            #expect(device.received.filter { $0.type == "alert.raised" }.count == 2)
        }
    }

    @Test func theThrottleHoldsAcrossTwoInstances() async throws {
        let database = try await TestPostgres.shared.migratedDatabase()
        try await TestServer.run(database: database) { first in
            try await TestServer.run(database: database) { second in
                let (person, _) = try await first.individualSession()
                var rule = Self.glucoseRule
                rule["throttleMinutes"] = 60
                #expect(try await first.send(.post, "/api/users/rules", token: person, json: rule).status == .created)
                let now = Date()
                // Episode one through the first instance, a normal reading, then episode two through the second.
                try await SOSIncidentTests.upload(first, person, Self.glucose([60], from: now.addingTimeInterval(-240), tag: "a"))
                try await SOSIncidentTests.upload(second, person, Self.glucose([100, 50], from: now.addingTimeInterval(-180), tag: "b"))
                #expect(try await Self.alerts(second, person).count == 1)
                // Both instances at once with two more episodes: still the one alert.
                async let one: Void = SOSIncidentTests.upload(first, person, Self.glucose([100, 40], from: now.addingTimeInterval(-60), tag: "c"))
                async let two: Void = SOSIncidentTests.upload(second, person, Self.glucose([100, 45], from: now.addingTimeInterval(-30), tag: "d"))
                _ = try await (one, two)
                #expect(try await Self.alerts(first, person).count == 1)
            }
        }
    }
}
