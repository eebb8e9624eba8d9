import AccessManager
import DatabaseTestSupport
import Foundation
import HTTPAPI
import HTTPTypes
import Testing

@Suite("Carers: /api/users/carers, /api/users/care-invitations, /api/users/caring")
struct CareTests {
    /// Invited by address (a mail with no personal data), accepted by whoever holds it, shown
    /// with the shared types only, ended by either side — and then nothing.
    @Test func anInvitationsLifeAndWhatTheCarerSees() async throws {
        try await TestServer.run { api in
            let (person, personAccount) = try await api.individualSession()
            let (carer, carerAccount) = try await api.individualSession()
            let (stranger, _) = try await api.individualSession()
            let carerEmail = try #require(carerAccount["email"] as? String)
            let now = Date()
            try await SOSIncidentTests.upload(api, person, WatchRuleTests.glucose([95, 101], from: now.addingTimeInterval(-600), tag: "g"))
            try await SOSIncidentTests.upload(api, person, SOSIncidentTests.heartRates([61, 64], from: now.addingTimeInterval(-600), tag: "h"))

            let mailsBefore = Mailbox.messages(to: carerEmail).count
            let invited = try await api.send(
                .post, "/api/users/carers", token: person, json: ["email": carerEmail.uppercased(), "types": ["bloodGlucose"]])
            #expect(invited.status == .created)
            let linkId = try #require(invited.string("id"))
            #expect(invited.string("status") == "invited" && invited.string("carerEmail") == carerEmail && invited.json["carerName"] is NSNull)
            let mail = try #require(try await Mailbox.waitForMessages(to: carerEmail, count: mailsBefore + 1).last)
            let personName = try #require(personAccount["fullName"] as? String)
            #expect(!mail.text.contains(personName), "the mail names nobody")

            // Only the address's holder sees and answers the invitation.
            #expect(try await api.send(.get, "/api/users/care-invitations", token: stranger).items.isEmpty)
            #expect(try await api.send(.post, "/api/users/care-invitations/\(linkId)/accept", token: stranger).status == .notFound)
            #expect(try await api.send(.post, "/api/users/care-invitations/\(linkId)/accept", token: person).status == .notFound)
            let invitations = try await api.send(.get, "/api/users/care-invitations", token: carer).items
            #expect(invitations.map { $0["id"] as? String } == [linkId])
            #expect(invitations.first?["personName"] as? String == personName)
            #expect(try await api.send(.get, "/api/users/caring", token: carer).items.isEmpty, "nothing before accepting")

            let accepted = try await api.send(.post, "/api/users/care-invitations/\(linkId)/accept", token: carer)
            #expect(accepted.status == .ok && accepted.string("status") == "accepted")
            #expect(accepted.string("carerName") == carerAccount["fullName"] as? String)
            #expect(try await api.send(.post, "/api/users/care-invitations/\(linkId)/decline", token: carer).status == .notFound)

            // The carer sees the shared type's latest value, not the heart rate.
            let caring = try await api.send(.get, "/api/users/caring", token: carer).items
            #expect(caring.count == 1)
            let latest = try #require(caring.first?["latest"] as? [[String: Any]])
            #expect(latest.map { $0["type"] as? String } == ["bloodGlucose"])
            #expect(latest.first?["value"] as? Double == 101)
            #expect(try await api.send(.get, "/api/users/caring", token: stranger).items.isEmpty)

            // The look is in the person's access log, as a disclosure to the carer.
            let log = try await api.send(.get, "/api/users/access-log", token: person).items
            let entry = try #require(log.first)
            #expect(entry["channel"] as? String == "carer" && entry["types"] as? [String] == ["bloodGlucose"])
            #expect((entry["carer"] as? [String: Any])?["linkId"] as? String == linkId && entry["organisation"] is NSNull)

            // Another individual cannot end it; the person can, and then the carer sees nothing.
            #expect(try await api.send(.delete, "/api/users/carers/\(linkId)", token: stranger).status == .notFound)
            #expect(try await api.send(.delete, "/api/users/caring/\(linkId)", token: stranger).status == .notFound)
            #expect(try await api.send(.delete, "/api/users/carers/\(linkId)", token: person).status == .noContent)
            #expect(try await api.send(.get, "/api/users/caring", token: carer).items.isEmpty)
            let links = try await api.send(.get, "/api/users/carers", token: person).items
            #expect(links.first?["status"] as? String == "ended" && links.first?["endedBy"] as? String == "individual")
            #expect(try await api.send(.delete, "/api/users/carers/\(linkId)", token: person).status == .noContent, "ending twice changes nothing")
        }
    }

    @Test func declinedInvitationsAndCarersWhoStop() async throws {
        try await TestServer.run { api in
            let (person, _) = try await api.individualSession()
            let (carer, carerAccount) = try await api.individualSession()
            let email = try #require(carerAccount["email"] as? String)
            let first = try await api.send(.post, "/api/users/carers", token: person, json: ["email": email, "types": ["heartRate"]])
            let firstId = try #require(first.string("id"))
            // One open invitation per address.
            let again = try await api.send(.post, "/api/users/carers", token: person, json: ["email": email, "types": ["heartRate"]])
            #expect(again.status == .conflict)
            let declined = try await api.send(.post, "/api/users/care-invitations/\(firstId)/decline", token: carer)
            #expect(declined.status == .ok && declined.string("status") == "declined" && declined.json["carerName"] is NSNull)
            #expect(try await api.send(.get, "/api/users/care-invitations", token: carer).items.isEmpty)

            // Invited again after a decline; accepted; the carer stops.
            let second = try await api.send(.post, "/api/users/carers", token: person, json: ["email": email, "types": ["heartRate"]])
            #expect(second.status == .created)
            let secondId = try #require(second.string("id"))
            #expect(try await api.send(.post, "/api/users/care-invitations/\(secondId)/accept", token: carer).status == .ok)
            #expect(try await api.send(.delete, "/api/users/carers/\(secondId)", token: carer).status == .notFound, "not the carer's side")
            #expect(try await api.send(.delete, "/api/users/caring/\(secondId)", token: carer).status == .noContent)
            #expect(try await api.send(.get, "/api/users/caring", token: carer).items.isEmpty)
            let links = try await api.send(.get, "/api/users/carers", token: person).items
            #expect(links.map { $0["status"] as? String } == ["ended", "declined"])
            #expect(links.first?["endedBy"] as? String == "carer")
        }
    }

    @Test func invitationsAreRefusedFieldByField() async throws {
        try await TestServer.run { api in
            let (person, account) = try await api.individualSession()
            let (other, _) = try await api.individualSession()
            let othersRule = try await api.send(.post, "/api/users/rules", token: other, json: WatchRuleTests.glucoseRule)
            let othersRuleId = try #require(othersRule.string("id"))
            let refusals: [(JSONObject, [String])] = [
                ([:], ["email", "types"]),
                (["email": "not an address", "types": ["heartRate"]], ["email"]),
                (["email": "a@example.org", "types": [] as [String]], ["types"]),
                (["email": "a@example.org", "types": ["heartbeat"]], ["types"]),
                (["email": "a@example.org", "types": ["heartRate"], "rules": ["nope"]], ["rules"]),
                (["email": "a@example.org", "types": ["heartRate"], "rules": [othersRuleId]], ["rules"]),
                (["email": try #require(account["email"] as? String), "types": ["heartRate"]], ["email"]),
            ]
            for (body, fields) in refusals {
                let reply = try await api.send(.post, "/api/users/carers", token: person, json: body)
                #expect(reply.status == .unprocessableContent && reply.problemFields.sorted() == fields.sorted(), "\(body)")
            }
            #expect(try await api.send(.get, "/api/users/carers", token: person).items.isEmpty, "nothing half-written")
        }
    }

    /// A shared rule's alert reaches the carer's device (signed, naming the person and the link)
    /// and is in the carer's list until acknowledged; an unshared rule's alert never reaches them.
    @Test func aSharedRulesAlertReachesTheCarer() async throws {
        let device = try WebhookReceiver()
        let listening = device.start()
        defer { listening.cancel() }
        try await TestServer.run(configure: WebhookTests.localDelivery) { api in
            let (person, personAccount) = try await api.individualSession()
            let (carer, carerAccount) = try await api.individualSession()
            let secret = try await WebhookTests.register(api, carer, device.url, path: "/api/users/notifications")
            let shared = try #require(try await api.send(.post, "/api/users/rules", token: person, json: WatchRuleTests.glucoseRule).string("id"))
            var unsharedRule = WatchRuleTests.glucoseRule
            unsharedRule["name"] = "Heart"
            unsharedRule["type"] = "heartRate"
            unsharedRule["when"] = "below"
            unsharedRule["value"] = 40
            unsharedRule["low"] = nil
            unsharedRule["high"] = nil
            let unshared = try await api.send(.post, "/api/users/rules", token: person, json: unsharedRule)
            #expect(unshared.status == .created)
            let link = try await api.send(
                .post, "/api/users/carers", token: person,
                json: ["email": try #require(carerAccount["email"] as? String), "types": ["bloodGlucose"], "rules": [shared]])
            let linkId = try #require(link.string("id"))
            #expect(link.json["rules"] as? [String] == [shared])
            #expect(try await api.send(.post, "/api/users/care-invitations/\(linkId)/accept", token: carer).status == .ok)

            let now = Date()
            try await SOSIncidentTests.upload(api, person, SOSIncidentTests.heartRates([35], from: now.addingTimeInterval(-120), tag: "low"))
            try await SOSIncidentTests.upload(api, person, WatchRuleTests.glucose([60], from: now.addingTimeInterval(-60), tag: "hypo"))
            #expect(try await WatchRuleTests.alerts(api, person).count == 2)
            try await device.wait { $0.contains { $0.type == "care.alert.raised" } }
            let told = device.received.filter { $0.type == "care.alert.raised" }
            #expect(told.count == 1)
            let message = try #require(told.first)
            #expect(WebhookReceiver.verify(message, secret: secret))
            let data = try #require(message.json["data"] as? [String: Any])
            #expect(data["careLinkId"] as? String == linkId && data["personName"] as? String == personAccount["fullName"] as? String)
            #expect((data["alert"] as? [String: Any])?["ruleId"] as? String == shared)

            let caring = try await api.send(.get, "/api/users/caring", token: carer).items
            let open = try #require(caring.first?["openAlerts"] as? [[String: Any]])
            #expect(open.map { $0["ruleId"] as? String } == [shared])
            let alertId = try #require(open.first?["id"] as? String)
            #expect(try await api.send(.post, "/api/users/alerts/\(alertId)/acknowledge", token: carer).status == .notFound, "the person's alert")
            #expect(try await api.send(.post, "/api/users/alerts/\(alertId)/acknowledge", token: person).status == .ok)
            let after = try await api.send(.get, "/api/users/caring", token: carer).items
            #expect((after.first?["openAlerts"] as? [[String: Any]])?.isEmpty == true)
            let log = try await api.send(.get, "/api/users/access-log", token: person).items
            #expect(
                log.contains { $0["channel"] as? String == "carer" && $0["types"] as? [String] == ["bloodGlucose"] && $0["itemCount"] as? Int == 1 })
        }
    }
}
