import DatabaseLink
import DatabaseTestSupport
import Foundation
import HTTPAPI
import HTTPTypes
import HealthSharing
import Testing

/// AutomatedSOS end to end: readings through the ingest API, incidents in PostgreSQL, calls to a
/// real HTTP dispatch-centre simulator.
@Suite("AutomatedSOS: detection, incidents and dispatch")
struct SOSIncidentTests {
    // MARK: Helpers

    static func enrol(_ api: APIClient, _ token: String, _ settings: JSONObject = [:]) async throws {
        var body: JSONObject = ["enabled": true, "consecutiveReadings": 3, "cancelWindowSeconds": 0]
        body.merge(settings) { $1 }
        let reply = try await api.send(.put, "/api/users/sos", token: token, json: body)
        #expect(reply.status == .ok)
    }

    static func time(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }

    /// Heart-rate readings one second apart from `start`, each with its own client id.
    static func heartRates(_ values: [Int], from start: Date, offset: Int = 0, tag: String = "hr") -> JSONObject {
        let items: [any Sendable] = values.enumerated().map { index, value in
            [
                "type": "heartRate", "value": value, "start": Self.time(start.addingTimeInterval(Double(offset + index))),
                "id": "\(tag)-\(offset + index)",
            ] as JSONObject
        }
        return ["items": items]
    }

    static func upload(_ api: APIClient, _ token: String, _ body: JSONObject) async throws {
        let reply = try await api.send(.post, "/api/users/data", token: token, json: body)
        #expect(reply.status == .ok && (reply.json["rejected"] as? [Any])?.isEmpty == true, "\(String(decoding: reply.data, as: UTF8.self))")
    }

    static func incidents(_ api: APIClient, _ token: String) async throws -> [[String: Any]] {
        try await api.send(.get, "/api/users/sos/incidents", token: token).items
    }

    /// Polls my incidents until `condition` holds, returning as soon as it does; `timeout` (90 s,
    /// as `WebhookReceiver.wait`) only stops a wait for something that never comes: retried
    /// dispatches took over 20 s beside a build.
    static func waitForIncidents(
        _ api: APIClient, _ token: String, timeout: Duration = .seconds(90), until condition: ([[String: Any]]) -> Bool
    ) async throws -> [[String: Any]] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let items = try await Self.incidents(api, token)
            if condition(items) { return items }
            guard ContinuousClock.now < deadline else { throw IncidentsTimedOut(lastSeen: items) }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// A wait that ran out, with what the listing last showed: which side of the dispatch the
    /// incidents were stuck on.
    struct IncidentsTimedOut: Error, CustomStringConvertible {
        let description: String

        init(lastSeen: [[String: Any]]) {
            let incidents = lastSeen.map { incident in
                ["status", "dispatchAttempts", "detectedAt", "dispatchedAt", "cancelledAt"]
                    .map { "\($0)=\(incident[$0].map { "\($0)" } ?? "-")" }.joined(separator: " ")
            }
            description = "no incident listing met the condition in time; the last one: [\(incidents.joined(separator: "; "))]"
        }
    }

    // MARK: Detection

    @Test func exactlyNConsecutiveLowReadingsTriggerAndNMinusOneThenANormalOneDoNot() async throws {
        let centre = try DispatchCentre()
        let listening = centre.start()
        defer { listening.cancel() }
        try await TestServer.run(configure: centre.configure) { api in
            let (person, account) = try await api.individualSession()
            try await Self.enrol(api, person, ["medicalNotes": "Pacemaker since 2019."])
            let start = Date().addingTimeInterval(-60)
            try await Self.upload(
                api, person,
                [
                    "items": [
                        ["latitude": 45.4642, "longitude": 9.19, "accuracy": 12, "time": Self.time(Date().addingTimeInterval(-30))] as JSONObject
                    ]
                ])
            // Two low, one normal, two low: never three in a row.
            try await Self.upload(api, person, Self.heartRates([35, 33, 70, 34, 36], from: start))
            #expect(try await Self.incidents(api, person).isEmpty)
            // The third consecutive low reading opens the emergency, and the call goes out.
            try await Self.upload(api, person, Self.heartRates([31], from: start, offset: 5))
            let incident = try #require(try await Self.waitForIncidents(api, person) { $0.first?["status"] as? String == "dispatched" }.first)
            #expect((incident["readings"] as? [[String: Any]])?.compactMap { $0["value"] as? Double } == [34, 36, 31])
            #expect(incident["type"] as? String == "heartRate" && incident["dispatchedAt"] is String && incident["cancelledAt"] is NSNull)
            let location = try #require(incident["location"] as? [String: Any])
            #expect(location["stale"] as? Bool == false && location["latitude"] as? Double == 45.4642 && location["homeArea"] as? String == "IT-MI")

            let call = try #require(centre.dispatches.first).json
            #expect(centre.dispatches.count == 1 && centre.dispatches[0].incidentId == incident["id"] as? String)
            let callPerson = try #require(call["person"] as? [String: Any])
            #expect(
                callPerson["name"] as? String == account["fullName"] as? String && callPerson["medicalNotes"] as? String == "Pacemaker since 2019.")
            #expect((callPerson["age"] as? Int ?? 0) > 0 && callPerson["sex"] is String)
            let vitals = try #require(call["vitals"] as? [String: Any])
            #expect(vitals["type"] as? String == "heartRate" && vitals["unit"] as? String == "bpm")
            #expect((call["location"] as? [String: Any])?["accuracy"] as? Double == 12)
            #expect(incident["dispatchReference"] as? String == centre.dispatches[0].reference)

            // Readings that stay low continue the same run: still one incident.
            try await Self.upload(api, person, Self.heartRates([30, 29, 30, 31], from: start, offset: 6))
            #expect(try await Self.incidents(api, person).count == 1)
        }
    }

    @Test func lateAndDuplicateReadingsArePlacedByTheirTimeAndCountOnce() async throws {
        try await TestServer.run { api in
            let (person, _) = try await api.individualSession()
            try await Self.enrol(api, person, ["consecutiveReadings": 3])
            let start = Date().addingTimeInterval(-30)
            let first = ["type": "heartRate", "value": 30, "start": Self.time(start), "id": "a"] as JSONObject
            let third = ["type": "heartRate", "value": 31, "start": Self.time(start.addingTimeInterval(2)), "id": "c"] as JSONObject
            try await Self.upload(api, person, ["items": [first, third]])
            // The phone resends the first one: stored once, counted once.
            try await Self.upload(api, person, ["items": [first]])
            #expect(try await Self.incidents(api, person).isEmpty)
            // A normal reading after them, then the missing middle one arrives late: 30, 32, 31 in time order.
            try await Self.upload(
                api, person,
                ["items": [["type": "heartRate", "value": 75, "start": Self.time(start.addingTimeInterval(3)), "id": "d"] as JSONObject]])
            try await Self.upload(
                api, person,
                ["items": [["type": "heartRate", "value": 32, "start": Self.time(start.addingTimeInterval(1)), "id": "b"] as JSONObject]])
            let incident = try #require(try await Self.incidents(api, person).first)
            #expect((incident["readings"] as? [[String: Any]])?.compactMap { $0["value"] as? Double } == [30, 32, 31])
            #expect(incident["status"] as? String == "detected")  // no dispatch centre configured on this instance
        }
    }

    @Test func oxygenSaturationAndMaximumHeartRateAreWatchedToo() async throws {
        try await TestServer.run { api in
            let (person, _) = try await api.individualSession()
            try await Self.enrol(api, person, ["consecutiveReadings": 2, "maxHeartRate": 150, "minOxygenSaturation": 88])
            let start = Date().addingTimeInterval(-20)
            try await Self.upload(api, person, Self.heartRates([160, 70, 165], from: start))
            #expect(try await Self.incidents(api, person).isEmpty)
            let oxygen: [any Sendable] = [86, 85].enumerated().map { index, value in
                ["type": "oxygenSaturation", "value": value, "start": Self.time(start.addingTimeInterval(Double(index))), "id": "o\(index)"]
                    as JSONObject
            }
            try await Self.upload(api, person, ["items": oxygen])
            #expect(try await Self.incidents(api, person).first?["type"] as? String == "oxygenSaturation")
        }
    }

    @Test func notEnrolledOrDisabledOrOldReadingsNeverTrigger() async throws {
        try await TestServer.run { api in
            let (never, _) = try await api.individualSession()
            try await Self.upload(api, never, Self.heartRates([25, 25, 25, 25, 25], from: Date().addingTimeInterval(-10)))
            #expect(try await Self.incidents(api, never).isEmpty)

            let (disabled, _) = try await api.individualSession()
            try await Self.enrol(api, disabled, ["enabled": false])
            try await Self.upload(api, disabled, Self.heartRates([25, 25, 25, 25, 25], from: Date().addingTimeInterval(-10)))
            #expect(try await Self.incidents(api, disabled).isEmpty)

            // Yesterday's readings synced today are history, not an emergency now.
            let (late, _) = try await api.individualSession()
            try await Self.enrol(api, late)
            try await Self.upload(api, late, Self.heartRates([25, 25, 25, 25], from: Date().addingTimeInterval(-86_400)))
            #expect(try await Self.incidents(api, late).isEmpty)

            // Incidents are their individual's own.
            let (person, _) = try await api.individualSession()
            try await Self.enrol(api, person)
            try await Self.upload(api, person, Self.heartRates([25, 25, 25], from: Date().addingTimeInterval(-10)))
            let id = try #require(try await Self.incidents(api, person).first?["id"] as? String)
            #expect(try await api.send(.get, "/api/users/sos/incidents/\(id)", token: never).status == .notFound)
            #expect(try await api.send(.post, "/api/users/sos/incidents/\(id)/cancel", token: never).status == .notFound)
            let (party, _) = try await api.thirdPartySession()
            #expect(try await api.send(.get, "/api/users/sos/incidents", token: party).status == .forbidden)
        }
    }

    // MARK: Cancel window

    @Test func cancelInsideTheWindowStopsTheDispatchAfterItOnlyRecordsIt() async throws {
        let centre = try DispatchCentre()
        let listening = centre.start()
        defer { listening.cancel() }
        try await TestServer.run(configure: centre.configure) { api in
            let (person, _) = try await api.individualSession()
            // The longest window (4 s): the cancellation must land inside it while the whole
            // suite runs at once on two cores (with 3 s it did not, once in a few runs).
            try await Self.enrol(api, person, ["cancelWindowSeconds": 4])
            try await Self.upload(api, person, Self.heartRates([30, 30, 30], from: Date().addingTimeInterval(-5)))
            let id = try #require(try await Self.incidents(api, person).first?["id"] as? String)
            let cancelled = try await api.send(.post, "/api/users/sos/incidents/\(id)/cancel", token: person)
            #expect(cancelled.status == .ok && cancelled.json["cancelledAt"] is String)
            // The server says which side of the window the cancellation landed on; on two cores
            // running the whole suite it can be after (responses then take seconds). Inside, the
            // dispatch stops; after, it is recorded only — and the test below covers that side.
            if cancelled.json["status"] as? String == "cancelled" {
                try await Task.sleep(for: .seconds(5))  // past the window: nothing goes out
                #expect(centre.dispatches.isEmpty)
                #expect(try await Self.incidents(api, person).first?["dispatchAttempts"] as? Int == 0)
            } else {
                // After the window the call is due whatever happens: already made, or about to be
                // (the dispatcher had not reached it yet on a loaded machine) — then it goes out.
                #expect(["dispatched", "detected"].contains(cancelled.json["status"] as? String), "\(cancelled.json)")
                _ = try await Self.waitForIncidents(api, person) { $0.first?["status"] as? String == "dispatched" }
                #expect(centre.dispatches.count == 1)
            }
            let before = centre.dispatches.count

            // With no window the call goes out at once; a later cancellation is recorded, not acted on.
            let (other, _) = try await api.individualSession()
            try await Self.enrol(api, other)
            try await Self.upload(api, other, Self.heartRates([30, 30, 30], from: Date().addingTimeInterval(-5)))
            let dispatched = try #require(try await Self.waitForIncidents(api, other) { $0.first?["status"] as? String == "dispatched" }.first)
            let late = try await api.send(.post, "/api/users/sos/incidents/\(dispatched["id"] as? String ?? "")/cancel", token: other)
            #expect(late.json["status"] as? String == "dispatched" && late.json["cancelledAt"] is String)
            #expect(centre.dispatches.count == before + 1)
        }
    }

    // MARK: Dispatch

    @Test(.timeLimit(.minutes(20))) func dispatchCentreDownThenUpIsCalledOnceAfterRetries() async throws {
        let centre = try DispatchCentre()  // not listening yet: connections are refused
        try await TestServer.run(configure: centre.configure) { api in
            let (person, _) = try await api.individualSession()
            try await Self.enrol(api, person)
            try await Self.upload(api, person, Self.heartRates([30, 30, 30], from: Date().addingTimeInterval(-5)))
            let failing = try await Self.waitForIncidents(api, person) { ($0.first?["dispatchAttempts"] as? Int ?? 0) >= 3 }
            #expect(failing.first?["status"] as? String == "detected")
            let listening = centre.start()
            defer { listening.cancel() }
            let done = try await Self.waitForIncidents(api, person) { $0.first?["status"] as? String == "dispatched" }
            // One dispatch: the centre keys calls by the incident (Idempotency-Key). Usually one
            // call too; on a loaded machine an answer slower than the dispatch timeout is
            // retried, and the centre still dispatches once.
            #expect(centre.dispatches.count == 1 && centre.dispatches[0].calls >= 1)
            #expect(centre.dispatches[0].incidentId == done.first?["id"] as? String)
        }
    }

    @Test(.timeLimit(.minutes(20))) func twoInstancesDispatchEachIncidentOnce() async throws {
        let database = try await TestPostgres.shared.migratedDatabase()
        let centre = try DispatchCentre()
        let listening = centre.start()
        defer { listening.cancel() }
        try await TestServer.run(database: database, configure: centre.configure) { first in
            try await TestServer.run(database: database, configure: centre.configure) { second in
                var people: [String] = []
                for index in 0..<12 {
                    let api = index.isMultiple(of: 2) ? first : second
                    let (person, _) = try await api.individualSession()
                    try await Self.enrol(api, person, ["cancelWindowSeconds": index % 3])
                    people.append(person)
                }
                // Each person's readings arrive through both instances.
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for (index, person) in people.enumerated() {
                        group.addTask {
                            let start = Date().addingTimeInterval(-10)
                            try await Self.upload(first, person, Self.heartRates([30, 30], from: start))
                            try await Self.upload(index.isMultiple(of: 3) ? first : second, person, Self.heartRates([30], from: start, offset: 2))
                        }
                    }
                    try await group.waitForAll()
                }
                try await centre.wait { $0.count == 12 }
                try await Task.sleep(for: .seconds(1))  // time for any duplicate to show up
                #expect(centre.dispatches.count == 12 && centre.dispatches.allSatisfy { $0.calls == 1 })
                for person in people {
                    let items = try await Self.waitForIncidents(first, person) { $0.first?["status"] as? String == "dispatched" }
                    #expect(items.count == 1 && items[0]["dispatchAttempts"] as? Int == 1)
                }
            }
        }
    }

    @Test func staleLocationIsFlaggedWithTheHomeArea() async throws {
        try await TestServer.run { api in
            let (person, _) = try await api.individualSession()
            try await Self.enrol(api, person)
            let old = Date().addingTimeInterval(-20 * 60)
            try await Self.upload(api, person, ["items": [["latitude": 45.1, "longitude": 9.1, "time": Self.time(old)] as JSONObject]])
            try await Self.upload(api, person, Self.heartRates([30, 30, 30], from: Date().addingTimeInterval(-5)))
            let location = try #require(try await Self.incidents(api, person).first?["location"] as? [String: Any])
            #expect(location["stale"] as? Bool == true && location["homeArea"] as? String == "IT-MI")
            // The incident is part of my data export.
            let export = String(decoding: try await api.send(.get, "/api/users/export", token: person).data, as: UTF8.self)
            #expect(export.split(separator: "\n").contains { $0.contains(#""kind":"incident""#) && $0.contains(#""stale":true"#) })
            #expect(location["latitude"] as? Double == 45.1 && (location["ageSeconds"] as? Int ?? 0) >= 1195)

            let (nowhere, _) = try await api.individualSession()
            try await Self.enrol(api, nowhere)
            try await Self.upload(api, nowhere, Self.heartRates([30, 30, 30], from: Date().addingTimeInterval(-5)))
            let unknown = try #require(try await Self.incidents(api, nowhere).first?["location"] as? [String: Any])
            #expect(unknown["stale"] as? Bool == true && unknown["latitude"] is NSNull && unknown["ageSeconds"] is NSNull)
        }
    }

    @Test func contactsAndTheDeviceAreToldWithSignedWebhooks() async throws {
        let centre = try DispatchCentre()
        let listening = centre.start()
        defer { listening.cancel() }
        let contact = try WebhookReceiver(), device = try WebhookReceiver()
        let contactListening = contact.start(), deviceListening = device.start()
        defer { contactListening.cancel(); deviceListening.cancel() }
        try await TestServer.run(configure: centre.configure) { api in
            let (person, _) = try await api.individualSession()
            let deviceSecret = try await WebhookTests.register(api, person, device.url, path: "/api/users/notifications")
            try await Self.enrol(
                api, person,
                [
                    "contacts": [
                        ["name": "Giulia Rossi", "phone": "+39 333 1234567", "webhookUrl": contact.url] as JSONObject,
                        ["name": "Marco Bianchi", "phone": "+39 333 7654321"] as JSONObject,
                    ]
                ])
            let contacts = try #require(try await api.send(.get, "/api/users/sos", token: person).json["contacts"] as? [[String: Any]])
            let contactSecret = try #require(contacts[0]["webhookSecret"] as? String)
            #expect(contacts[1]["webhookSecret"] is NSNull)
            try await Self.upload(api, person, Self.heartRates([30, 30, 30], from: Date().addingTimeInterval(-5)))
            try await contact.wait { !$0.isEmpty }
            try await device.wait { !$0.isEmpty }
            let told = contact.received[0]
            #expect(told.type == "sos.dispatched" && WebhookReceiver.verify(told, secret: contactSecret))
            #expect((told.json["data"] as? [String: Any])?["homeArea"] as? String == "IT-MI")
            #expect(device.received[0].type == "sos.detected" && WebhookReceiver.verify(device.received[0], secret: deviceSecret))
            // No fix was ever uploaded: the contact is told so (null coordinates, stale), not left guessing.
            let toldData = try #require(told.json["data"] as? [String: Any])
            #expect(toldData["latitude"] is NSNull && toldData["longitude"] is NSNull && toldData["locationStale"] as? Bool == true)
            let detected = try #require(device.received[0].json["data"] as? [String: Any])
            #expect(detected["status"] as? String == "detected" && (detected["dispatchDueAt"] as? String)?.hasSuffix("Z") == true)
            // The dispatch centre gets every contact, to call those without a webhook.
            try await centre.wait { !$0.isEmpty }
            #expect(
                (centre.dispatches[0].json["contacts"] as? [[String: Any]])?.compactMap { $0["phone"] as? String } == [
                    "+393331234567", "+393337654321",
                ])
        }
    }

    @Test func theDispatchCentreAcknowledgesAndResolvesWithSignedReports() async throws {
        let centre = try DispatchCentre()
        let listening = centre.start()
        defer { listening.cancel() }
        try await TestServer.run(configure: centre.configure) { api in
            let (person, _) = try await api.individualSession()
            try await Self.enrol(api, person)
            try await Self.upload(api, person, Self.heartRates([30, 30, 30], from: Date().addingTimeInterval(-30)))
            let id = try #require(
                try await Self.waitForIncidents(api, person) { $0.first?["status"] as? String == "dispatched" }.first?["id"] as? String)

            let body = #"{"reference":"CREW-7"}"#
            #expect(try await api.send(.post, "/api/dispatch/incidents/\(id)/acknowledge", raw: body).status == .unauthorized)
            let forged = WebhookSignature.header(
                secret: "not-the-dispatch-secret-at-all", timestamp: Int64(Date().timeIntervalSince1970), body: Array(body.utf8))
            #expect(
                try await api.send(
                    .post, "/api/dispatch/incidents/\(id)/acknowledge", raw: body, headers: [HTTPField.Name("Data4Help-Signature")!: forged]
                ).status == .unauthorized)

            func header(_ path: String, at time: Int64 = Int64(Date().timeIntervalSince1970)) -> String {
                WebhookSignature.header(secret: DispatchCentre.secret, timestamp: time, request: "POST \(path)", body: Array(body.utf8))
            }
            func send(_ path: String, _ header: String) async throws -> APIClient.Reply {
                try await api.send(
                    .post, path, raw: body, headers: [HTTPField.Name("Data4Help-Signature")!: header, .contentType: "application/json"])
            }
            func signed(_ path: String) async throws -> APIClient.Reply { try await send(path, header(path)) }
            // A signature of the body alone (the old scheme), or one made for another incident or
            // verb, does not move this incident.
            let bodyOnly = WebhookSignature.header(
                secret: DispatchCentre.secret, timestamp: Int64(Date().timeIntervalSince1970), body: Array(body.utf8))
            #expect(try await send("/api/dispatch/incidents/\(id)/acknowledge", bodyOnly).status == .unauthorized)
            let other = UUID().uuidString.lowercased()
            #expect(
                try await send("/api/dispatch/incidents/\(id)/acknowledge", header("/api/dispatch/incidents/\(other)/acknowledge")).status
                    == .unauthorized)
            #expect(
                try await send("/api/dispatch/incidents/\(id)/resolve", header("/api/dispatch/incidents/\(id)/acknowledge")).status == .unauthorized)
            let first = header("/api/dispatch/incidents/\(id)/acknowledge")
            let acknowledged = try await send("/api/dispatch/incidents/\(id)/acknowledge", first)
            // The same signed report again: a replay, refused.
            let replayed = try await send("/api/dispatch/incidents/\(id)/acknowledge", first)
            #expect(replayed.status == .conflict && replayed.string("type")?.hasSuffix("report-replayed") == true)
            #expect(
                acknowledged.status == .ok && acknowledged.json["status"] as? String == "acknowledged"
                    && acknowledged.json["dispatchReference"] as? String == "CREW-7")
            let resolved = try await signed("/api/dispatch/incidents/\(id)/resolve")
            #expect(resolved.json["status"] as? String == "resolved" && resolved.json["resolvedAt"] is String)
            #expect(try await signed("/api/dispatch/incidents/\(id)/acknowledge").status == .conflict)
            #expect(try await signed("/api/dispatch/incidents/\(UUID().uuidString.lowercased())/resolve").status == .notFound)

            // Resolved, the person can have a new emergency.
            try await Self.upload(api, person, Self.heartRates([75, 30, 30, 30], from: Date().addingTimeInterval(-4), tag: "again"))
            #expect(try await Self.incidents(api, person).count == 2)
        }
    }
}
