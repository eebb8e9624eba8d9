import Foundation
import HTTPTypes
import Testing

@Suite("Individuals' pages: /me/rules and /me/alerts")
struct MeRulePagesTests {
    @Test func adoptWriteChangeTurnOffDeleteAndAcknowledge() async throws {
        try await TestServer.run { api in
            let (person, account) = try await api.individualSession()
            var me = try await IndividualPortalTests.signIn(api, account)
            let page = try await me.send(.get, "/me/rules")
            #expect(page.status == .ok && PortalBrowser.html(page).contains("No rules yet"))
            let csrf = try PortalBrowser.csrf(page)

            // A template in one click.
            let adopted = try await me.send(.post, "/me/rules/templates/glucoseOutOfRange/adopt", form: [("csrf", csrf)])
            #expect(adopted.status == .seeOther)
            // A rule of my own: refused field by field, with what I typed kept; then stored.
            let bad = try await me.send(
                .post, "/me/rules",
                form: [("csrf", csrf), ("name", "Night lows"), ("type", "heartRate"), ("when", "below"), ("value", "900"), ("over", "sustained")])
            let badHTML = PortalBrowser.html(bad)
            #expect(bad.status == .unprocessableContent && badHTML.contains(#"id="value-error""#) && badHTML.contains(#"id="minutes-error""#))
            #expect(badHTML.contains(#"value="Night lows""#))
            let good = try await me.send(
                .post, "/me/rules",
                form: [
                    ("csrf", csrf), ("name", "Night lows"), ("type", "heartRate"), ("when", "below"), ("value", "45"), ("over", "sustained"),
                    ("minutes", "20"), ("severity", "warning"), ("throttleMinutes", "0"),
                ])
            #expect(good.status == .seeOther, "\(PortalBrowser.problems(good))")
            var rules = try await api.send(.get, "/api/users/rules", token: person).items
            #expect(
                rules.compactMap { $0["condition"] as? String }.sorted() == [
                    "blood glucose outside 70–180 mg/dL", "heart rate below 45 bpm for 20 minutes",
                ])
            let html = PortalBrowser.html(try await me.send(.get, "/me/rules"))
            #expect(html.contains("heart rate below 45 bpm for 20 minutes") && html.contains("Glucose out of range"))

            let night = try #require(rules.first { $0["name"] as? String == "Night lows" }?["id"] as? String)
            let glucose = try #require(rules.first { $0["name"] as? String == "Glucose out of range" }?["id"] as? String)

            // Change one: its page shows the rule in the form, choices selected; a bad change is
            // refused beside its field with what I typed, nothing stored; a good one is stored whole.
            #expect(html.contains(#"href="/me/rules/\#(glucose)""#))
            let editPage = try await me.send(.get, "/me/rules/\(glucose)")
            let editHTML = PortalBrowser.html(editPage)
            #expect(editPage.status == .ok && editHTML.contains(#"action="/me/rules/\#(glucose)""#))
            #expect(
                editHTML.contains(#"value="Glucose out of range""#)
                    && editHTML.contains(#"id="low" name="low" type="text" inputmode="decimal" value="70""#))
            #expect(
                editHTML.contains(#"<option value="bloodGlucose" selected>"#) && editHTML.contains(#"<option value="outside" selected>"#)
                    && editHTML.contains(#"<option value="warning" selected>"#))
            let change: [(String, String)] = [
                ("csrf", csrf), ("name", "My glucose range"), ("type", "bloodGlucose"), ("when", "outside"), ("low", "67"), ("high", "166"),
                ("over", "consecutive"), ("readings", "1"), ("activeFrom", "22:00"), ("activeTo", ""), ("severity", "urgent"),
                ("throttleMinutes", "60"),
            ]
            let refusedChange = try await me.send(.post, "/me/rules/\(glucose)", form: change)
            let refusedHTML = PortalBrowser.html(refusedChange)
            #expect(refusedChange.status == .unprocessableContent && refusedHTML.contains(#"id="activeTo-error""#))
            #expect(refusedHTML.contains(#"value="My glucose range""#) && refusedHTML.contains(#"<option value="urgent" selected>"#))
            #expect(try await api.send(.get, "/api/users/rules/\(glucose)", token: person).json["name"] as? String == "Glucose out of range")
            let changed = try await me.send(.post, "/me/rules/\(glucose)", form: change.map { $0.0 == "activeTo" ? ("activeTo", "07:00") : $0 })
            #expect(changed.status == .seeOther, "\(PortalBrowser.problems(changed))")
            var stored = try await api.send(.get, "/api/users/rules/\(glucose)", token: person).json
            #expect(stored["name"] as? String == "My glucose range" && stored["condition"] as? String == "blood glucose outside 67–166 mg/dL")
            #expect(stored["severity"] as? String == "urgent" && stored["throttleMinutes"] as? Int == 60 && stored["enabled"] as? Bool == true)
            #expect((stored["activeHours"] as? [String: Any])?["from"] as? String == "22:00" && stored["template"] as? String == "glucoseOutOfRange")
            // Emptied hours watch all day again; the page shows what is stored.
            #expect(
                try await me.send(.post, "/me/rules/\(glucose)", form: change.map { $0.0 == "activeFrom" ? ("activeFrom", "") : $0 }).status
                    == .seeOther)
            stored = try await api.send(.get, "/api/users/rules/\(glucose)", token: person).json
            #expect(stored["activeHours"] is NSNull)
            #expect(PortalBrowser.html(try await me.send(.get, "/me/rules")).contains("blood glucose outside 67–166 mg/dL"))

            // Turn one off, delete the other.
            #expect(try await me.send(.post, "/me/rules/\(night)/enabled", form: [("csrf", csrf), ("enabled", "false")]).status == .seeOther)
            #expect(PortalBrowser.html(try await me.send(.get, "/me/rules")).contains("Night lows (off)"))
            rules = try await api.send(.get, "/api/users/rules", token: person).items
            #expect(rules.first { $0["id"] as? String == night }?["enabled"] as? Bool == false)

            // An alert from the glucose rule, seen on /me/alerts and marked seen there.
            let reading: JSONObject = [
                "type": "bloodGlucose", "value": 55, "unit": "mg/dL", "start": WireFormatTime.string(Date().addingTimeInterval(-30)),
            ]
            #expect(try await api.send(.post, "/api/users/data", token: person, json: ["items": [reading]]).json["accepted"] as? Int == 1)
            let alerts = try await me.send(.get, "/me/alerts")
            let alertsHTML = PortalBrowser.html(alerts)
            #expect(alertsHTML.contains("blood glucose outside 67–166 mg/dL") && alertsHTML.contains(">55<"))
            let alertId = try #require(try await api.send(.get, "/api/users/alerts", token: person).items.first?["id"] as? String)
            #expect(
                try await me.send(.post, "/me/alerts/\(alertId)/acknowledge", form: [("csrf", try PortalBrowser.csrf(alerts))]).status == .seeOther)
            #expect(try await api.send(.get, "/api/users/alerts/\(alertId)", token: person).json["acknowledgedAt"] is String)

            #expect(try await me.send(.post, "/me/rules/\(glucose)/delete", form: [("csrf", csrf)]).status == .seeOther)
            #expect(try await api.send(.get, "/api/users/rules", token: person).items.count == 1)

            // Another individual's pages cannot touch my rule.
            let (_, stranger) = try await api.individualSession()
            var other = try await IndividualPortalTests.signIn(api, stranger)
            let theirs = try await other.send(.get, "/me/rules")
            let refused = try await other.send(.post, "/me/rules/\(night)/delete", form: [("csrf", try PortalBrowser.csrf(theirs))])
            #expect(refused.status == .notFound)
            #expect(try await other.send(.get, "/me/rules/\(night)").status == .notFound)
            let takeOver = try await other.send(
                .post, "/me/rules/\(night)", form: [("csrf", try PortalBrowser.csrf(theirs)), ("name", "Mine now"), ("type", "heartRate")])
            #expect(takeOver.status == .notFound)
            #expect(try await api.send(.get, "/api/users/rules/\(night)", token: person).json["name"] as? String == "Night lows")
            #expect(try await api.send(.get, "/api/users/rules", token: person).items.count == 1)
        }
    }
}
