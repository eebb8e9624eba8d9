import Foundation
import HTTPTypes
import Testing

@Suite("Individuals' pages (/me): decide, revoke, block, access log, my data, AutomatedSOS")
struct IndividualPortalTests {
    /// Signs `account` in on `/me` in a fresh browser.
    static func signIn(_ api: any APISending, _ account: [String: any Sendable]) async throws -> PortalBrowser {
        var browser = PortalBrowser(api)
        let login = try await browser.send(.get, "/me/login")
        #expect(login.status == .ok && !PortalBrowser.html(login).contains("Register your organisation"))
        let signedIn = try await browser.send(
            .post, "/me/login",
            form: [
                ("csrf", try PortalBrowser.csrf(login)), ("email", account["email"] as? String ?? ""), ("password", Fixtures.password),
            ])
        #expect(signedIn.status == .seeOther && signedIn.headers[.location] == "/me")
        let cookie = try #require(signedIn.headers[values: .setCookie].first { $0.hasPrefix("d4h_me=") })
        #expect(cookie.contains("HttpOnly") && cookie.contains("Path=/me"))
        return browser
    }

    /// The link an individual's confirmation message holds: a page with a button (opening it
    /// creates nothing), whose POST creates the account and signs in; the link works once.
    @Test func theMailedLinkOpensAPageWhoseButtonCreatesTheAccountOnce() async throws {
        try await TestServer.run { api in
            let account = Fixtures.individual()
            let email = try #require(account["email"] as? String)
            #expect(try await api.send(.post, "/api/users/registration", json: account).status == .accepted)
            let token = try await Mailbox.confirmationToken(for: email)
            var browser = PortalBrowser(api)
            let page = try await browser.send(.get, "/me/confirm?token=\(token)")
            #expect(page.status == .ok && PortalBrowser.html(page).contains(token))
            let notYet = try await api.send(.post, "/api/users/login", json: ["email": email, "password": Fixtures.password])
            #expect(notYet.status == .unauthorized)
            let confirmed = try await browser.send(.post, "/me/confirm", form: [("csrf", try PortalBrowser.csrf(page)), ("token", token)])
            #expect(confirmed.status == .seeOther && confirmed.headers[.location] == "/me")
            #expect(confirmed.headers[values: .setCookie].contains { $0.hasPrefix("d4h_me=") })
            #expect(try await browser.send(.get, "/me").status == .ok)

            var other = PortalBrowser(api)
            let again = try await other.send(.get, "/me/confirm?token=\(token)")
            let refused = try await other.send(.post, "/me/confirm", form: [("csrf", try PortalBrowser.csrf(again)), ("token", token)])
            #expect(refused.status == .unprocessableContent)
            #expect(PortalBrowser.html(refused).contains("This link is unknown, already used or expired"))
        }
    }

    @Test func acceptWithNarrowingDenyRevokeBlockAndTheAccessLog() async throws {
        try await TestServer.run { api in
            let (person, account) = try await api.individualSession()
            let fiscalCode = try #require(account["fiscalCode"] as? String)
            let (party, _) = try await api.thirdPartySession()
            let (otherParty, _) = try await api.thirdPartySession()
            func ask(_ token: String, _ types: [String]) async throws -> String {
                let reply = try await api.send(
                    .post, "/api/thirdparties/requests", token: token, json: ["fiscalCode": fiscalCode, "types": types, "purpose": "Study"])
                return try #require(reply.string("id"))
            }
            let first = try await ask(party, ["heartRate", "stepCount"])
            let second = try await ask(otherParty, ["heartRate"])

            var me = try await Self.signIn(api, account)
            let page = try await me.send(.get, "/me")
            let html = PortalBrowser.html(page)
            #expect(html.contains(#"data-request="\#(first)""#) && html.contains(#"data-request="\#(second)""#) && html.contains("Nobody."))
            let csrf = try PortalBrowser.csrf(page)

            // A window that is not a date: the API's message on the page, nothing decided.
            let bad = try await me.send(
                .post, "/me/requests/\(first)/decision",
                form: [("csrf", csrf), ("decision", "accept"), ("types", "heartRate"), ("dataFrom", "yesterday")])
            #expect(bad.status == .unprocessableContent && PortalBrowser.html(bad).contains(#"role="alert""#))
            #expect(try await api.send(.get, "/api/thirdparties/requests/\(first)", token: party).string("status") == "pending")

            // Accept heart rate only (step count unticked), deny the other.
            #expect(
                try await me.send(.post, "/me/requests/\(first)/decision", form: [("csrf", csrf), ("decision", "accept"), ("types", "heartRate")])
                    .status == .seeOther)
            let accepted = try await api.send(.get, "/api/thirdparties/requests/\(first)", token: party)
            #expect(accepted.string("status") == "granted" && (accepted.json["grant"] as? [String: Any])?["types"] as? [String] == ["heartRate"])
            #expect(try await me.send(.post, "/me/requests/\(second)/decision", form: [("csrf", csrf), ("decision", "deny")]).status == .seeOther)
            #expect(try await api.send(.get, "/api/thirdparties/requests/\(second)", token: otherParty).string("status") == "denied")

            // The organisation reads: the access log shows it.
            _ = try await api.send(
                .post, "/api/users/data", token: person,
                json: ["items": [["type": "heartRate", "value": 70, "unit": "bpm", "start": "2026-11-20T10:00:00Z"] as JSONObject]])
            #expect(try await api.send(.get, "/api/thirdparties/requests/\(first)/data", token: party).status == .ok)
            let log = PortalBrowser.html(try await me.send(.get, "/me/access-log"))
            #expect(log.contains("<td>heartRate </td>") && !log.contains("Nobody has received my data."))

            // Revoke: the organisation's reads stop.
            let grants = try await me.send(.get, "/me")
            #expect(PortalBrowser.html(grants).contains(#"<table id="granted">"#))
            #expect(try await me.send(.post, "/me/requests/\(first)/revoke", form: [("csrf", csrf)]).status == .seeOther)
            #expect(try await api.send(.get, "/api/thirdparties/requests/\(first)", token: party).string("status") == "revoked")

            // Block an organisation from its new request: it cannot ask again.
            let third = try await ask(party, ["stepCount"])
            let blocking = PortalBrowser.html(try await me.send(.get, "/me"))
            let organisation = try #require(blocking.firstMatch(of: /action="\/me\/blocked\/([^"]+)"/)).1
            #expect(blocking.contains(third))
            #expect(try await me.send(.post, "/me/blocked/\(organisation)", form: [("csrf", csrf)]).status == .seeOther)
            #expect(PortalBrowser.html(try await me.send(.get, "/me")).contains(#"<ul id="blocked">"#))
            #expect(try await me.send(.post, "/me/blocked/\(organisation)/unblock", form: [("csrf", csrf)]).status == .seeOther)

            // Another individual sees none of it and cannot decide for this one.
            let (_, stranger) = try await api.individualSession()
            var other = try await Self.signIn(api, stranger)
            let theirs = try await other.send(.get, "/me")
            #expect(!PortalBrowser.html(theirs).contains(first) && PortalBrowser.html(theirs).contains("No requests are waiting."))
            #expect(
                try await other.send(
                    .post, "/me/requests/\(third)/decision", form: [("csrf", try PortalBrowser.csrf(theirs)), ("decision", "accept")]
                ).status == .notFound)
            // A form without the session's token is refused.
            #expect(try await me.send(.post, "/me/requests/\(third)/decision", form: [("decision", "deny")]).status == .forbidden)
            // An organisation's session does not open /me.
            #expect(try await api.send(.get, "/me", headers: [.cookie: "d4h_me=\(party)"]).status == .seeOther)
        }
    }

    /// "Change" under a grant on `/me`: narrow it, turn its subscription off; a later end needs the
    /// box ticked; a form sent as shown changes nothing.
    @Test func aGrantIsChangedFromThePage() async throws {
        try await TestServer.run { api in
            let (_, account) = try await api.individualSession()
            let (party, _) = try await api.thirdPartySession()
            let asked = try await api.send(
                .post, "/api/thirdparties/requests", token: party,
                json: [
                    "fiscalCode": account["fiscalCode"]!, "types": ["heartRate", "stepCount"], "purpose": "Study", "subscribe": true,
                ])
            let id = try #require(asked.string("id"))
            var me = try await Self.signIn(api, account)
            let csrf = try PortalBrowser.csrf(try await me.send(.get, "/me"))
            #expect(try await me.send(.post, "/me/requests/\(id)/decision", form: [("csrf", csrf), ("decision", "accept")]).status == .seeOther)
            let page = PortalBrowser.html(try await me.send(.get, "/me"))
            #expect(page.contains(#"data-change="\#(id)""#) && page.contains(#"name="subscribe" value="yes" checked"#))
            func history() async throws -> Int {
                (try await api.send(.get, "/api/thirdparties/requests/\(id)", token: party).json["history"] as? [Any])?.count ?? 0
            }
            let before = try await history()

            // Sent as shown: nothing changes, nothing is recorded.
            let same: [(String, String)] = [
                ("csrf", csrf), ("types", "heartRate"), ("types", "stepCount"), ("subscriptionShown", "yes"), ("subscribe", "yes"),
            ]
            #expect(try await me.send(.post, "/me/requests/\(id)/change", form: same).status == .seeOther)
            #expect(try await history() == before)

            // Steps unticked and the subscription off.
            let narrowed = try await me.send(
                .post, "/me/requests/\(id)/change", form: [("csrf", csrf), ("types", "heartRate"), ("subscriptionShown", "yes")])
            #expect(narrowed.status == .seeOther)
            let grant = try await api.send(.get, "/api/thirdparties/requests/\(id)", token: party)
            #expect((grant.json["grant"] as? [String: Any])?["types"] as? [String] == ["heartRate"] && grant.json["subscribe"] as? Bool == false)
            #expect(try await history() == before + 1)

            // An end set, then a later one: refused on the page until confirmed.
            let soon = String(WireFormatTime.string(Date().addingTimeInterval(5 * 86_400)).prefix(10))
            let later = String(WireFormatTime.string(Date().addingTimeInterval(9 * 86_400)).prefix(10))
            let ends = try await me.send(.post, "/me/requests/\(id)/change", form: [("csrf", csrf), ("types", "heartRate"), ("accessUntil", soon)])
            #expect(ends.status == .seeOther)
            let refused = try await me.send(
                .post, "/me/requests/\(id)/change", form: [("csrf", csrf), ("types", "heartRate"), ("accessUntil", later)])
            #expect(refused.status == .unprocessableContent && PortalBrowser.html(refused).contains("confirmExtension"))
            let confirmed = try await me.send(
                .post, "/me/requests/\(id)/change",
                form: [("csrf", csrf), ("types", "heartRate"), ("accessUntil", later), ("confirmExtension", "yes")])
            #expect(confirmed.status == .seeOther)
            #expect(try await history() == before + 3)

            // Someone else cannot change it.
            let (_, stranger) = try await api.individualSession()
            var other = try await Self.signIn(api, stranger)
            let theirs = try PortalBrowser.csrf(try await other.send(.get, "/me"))
            #expect(try await other.send(.post, "/me/requests/\(id)/change", form: [("csrf", theirs), ("types", "heartRate")]).status == .notFound)
        }
    }

    @Test func myDataChartsAndAutomatedSOSSettings() async throws {
        try await TestServer.run { api in
            let (person, account) = try await api.individualSession()
            let now = Date()
            let items: [any Sendable] = (1...5).map { hour in
                [
                    "type": "heartRate", "value": 60 + hour, "unit": "bpm",
                    "start": WireFormatTime.string(now.addingTimeInterval(Double(-hour) * 3_600)),
                ] as JSONObject
            }
            #expect(try await api.send(.post, "/api/users/data", token: person, json: ["items": items]).json["accepted"] as? Int == 5)
            var me = try await Self.signIn(api, account)
            let health = PortalBrowser.html(try await me.send(.get, "/me/health"))
            #expect(health.components(separatedBy: #"class="bar""#).count - 1 == 5 && health.contains("No data in this period."))  // steps: none
            #expect(try await me.send(.get, "/me/health?period=week").status == .ok)
            #expect(!health.contains(#"id="glucose""#))  // no glucose readings: no glucose section

            // Glucose: the chart with the range shaded and the consensus figures, computed by hand for
            // 60, 100, 150, 200, 110 mg/dL against 70–180: in range 3 of 5, below 1, above 1; mean 124;
            // GMI 3.31 + 0.02392 × 124 = 6.27; sample SD √(11320 / 4) = 53.2, CV 42.9 %; one hypo episode.
            let glucose: [any Sendable] = [60, 100, 150, 200, 110].enumerated().map { index, value in
                [
                    "type": "bloodGlucose", "value": value, "unit": "mg/dL",
                    "start": WireFormatTime.string(now.addingTimeInterval(Double(index - 5) * 3_600)),
                ] as JSONObject
            }
            #expect(try await api.send(.post, "/api/users/data", token: person, json: ["items": glucose]).json["accepted"] as? Int == 5)
            let charted = PortalBrowser.html(try await me.send(.get, "/me/health"))
            #expect(charted.contains(#"id="glucose""#) && charted.contains(#"class="range""#))
            #expect(charted.components(separatedBy: #"class="glucose-reading "#).count - 1 == 5)
            #expect(charted.contains("60 % of 5 readings") && charted.contains("Target range 70–180 mg/dL"))
            #expect(
                charted.contains("<dd>20 % (below 54 mg/dL: 0 %); hypo episodes: 1</dd>") && charted.contains("<dd>20 % (above 250 mg/dL: 0 %)</dd>"))
            #expect(charted.contains("<dd>124 mg/dL, coefficient of variation 42.9 %</dd>") && charted.contains("<dd>6.3 %</dd>"))

            let sos = try await me.send(.get, "/me/sos")
            let csrf = try PortalBrowser.csrf(sos)
            let bad = try await me.send(
                .post, "/me/sos",
                form: [
                    ("csrf", csrf), ("enabled", "true"), ("minHeartRate", "5"), ("contacts[0].name", "Anna"), ("contacts[0].phone", "not a phone"),
                ])
            let badHTML = PortalBrowser.html(bad)
            #expect(
                bad.status == .unprocessableContent && badHTML.contains(#"id="minHeartRate-error""#) && badHTML.contains(#"id="contact-0-error""#))
            #expect(badHTML.contains(#"value="Anna""#))
            #expect(try await api.send(.get, "/api/users/sos", token: person).json["enabled"] as? Bool == false)

            let saved = try await me.send(
                .post, "/me/sos",
                form: [
                    ("csrf", csrf), ("enabled", "true"), ("minHeartRate", "40"), ("maxHeartRate", "170"), ("consecutiveReadings", "3"),
                    ("cancelWindowSeconds", "3"),
                    ("contacts[0].name", "Anna Rossi"), ("contacts[0].phone", "+393331234567"), ("medicalNotes", "Pacemaker"),
                ])
            #expect(saved.status == .seeOther, "\(PortalBrowser.problems(saved))")
            let stored = try await api.send(.get, "/api/users/sos", token: person).json
            #expect(
                stored["enabled"] as? Bool == true && stored["minHeartRate"] as? Double == 40
                    && (stored["contacts"] as? [[String: Any]])?.first?["name"] as? String == "Anna Rossi")
            #expect(PortalBrowser.html(try await me.send(.get, "/me/sos")).contains("Pacemaker"))
        }
    }
}

/// RFC 3339 in UTC with milliseconds, as the API writes times.
enum WireFormatTime {
    static func string(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt))
    }

}

extension IndividualPortalTests {
    /// `/me/imports` takes a file from the page's script only with the session's token in
    /// `X-CSRF-Token`; the import's status and the workouts' pages are the signed-in person's only.
    @Test func importsFromThePageNeedTheTokenAndWorkoutsStayTheirOwners() async throws {
        let tcx = String(decoding: try ImportTests.deviceFixture("gpsbabel-activity.tcx"), as: UTF8.self)
        try await TestServer.run { api in
            let (_, account) = try await api.individualSession()
            var me = try await Self.signIn(api, account)
            let page = try await me.send(.get, "/me/imports")
            #expect(page.status == .ok && PortalBrowser.html(page).contains("No imports yet."))
            let token = String(try #require(PortalBrowser.html(page).firstMatch(of: /data-csrf="([^"]+)"/)).1)
            let type: HTTPFields = [.contentType: "application/vnd.garmin.tcx+xml"]
            // Without the header the body is read as a form, which a file is not: refused before any import exists.
            #expect(try await me.send(.post, "/me/imports", raw: tcx, headers: type).status == .unsupportedMediaType, "no token")
            var wrong = type
            wrong[HTTPField.Name("X-CSRF-Token")!] = String(token.reversed())
            #expect(try await me.send(.post, "/me/imports", raw: tcx, headers: wrong).status == .forbidden, "another token")
            #expect(PortalBrowser.html(try await me.send(.get, "/me/imports")).contains("No imports yet."))
            var right = type
            right[HTTPField.Name("X-CSRF-Token")!] = token
            let posted = try await me.send(.post, "/me/imports", raw: tcx, headers: right)
            #expect(posted.status == .accepted && posted.string("format") == "tcx")
            let id = try #require(posted.string("id"))
            var state = ""
            for _ in 0..<200 where !["done", "failed"].contains(state) {
                state = try await me.send(.get, "/me/imports/\(id)/status").string("state") ?? ""
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(state == "done")
            let listed = try await me.send(.get, "/me/imports")
            #expect(PortalBrowser.html(listed).contains("data-id=\"\(id)\"") && PortalBrowser.html(listed).contains("location 540 / 0"))
            let workouts = PortalBrowser.html(try await me.send(.get, "/me/workouts"))
            let link = String(try #require(workouts.firstMatch(of: /href="(\/me\/workouts\/[0-9a-f-]+)"/)).1)
            let workout = try await me.send(.get, link)
            #expect(workout.status == .ok && PortalBrowser.html(workout).contains("<svg class=\"chart route\""))

            let (_, otherAccount) = try await api.individualSession()
            var other = try await Self.signIn(api, otherAccount)
            #expect(try await other.send(.get, link).status == .notFound)
            #expect(try await other.send(.get, "/me/imports/\(id)/status").status == .notFound)
            #expect(!PortalBrowser.html(try await other.send(.get, "/me/workouts")).contains(link))
        }
    }
}
