import DatabaseLink
import DatabaseTestSupport
import Foundation
import HTTPAPI
import HTTPTypes
import Testing

/// A browser's view of the portal over the test client: keeps cookies, reads forms' tokens.
struct PortalBrowser {
    let api: any APISending
    private(set) var cookies: [String: String] = [:]

    init(_ api: any APISending) {
        self.api = api
    }

    /// Sends `form` (URL-encoded), `raw` with `headers` (as a page's script does) or a GET, with
    /// this browser's cookies; keeps the ones set.
    mutating func send(
        _ method: HTTPRequest.Method, _ path: String, form: [(String, String)]? = nil, raw body: String? = nil, headers extra: HTTPFields = [:]
    ) async throws -> APIClient.Reply {
        var headers = extra
        if !cookies.isEmpty { headers[.cookie] = cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; ") }
        var raw = body
        if let form {
            headers[.contentType] = "application/x-www-form-urlencoded"
            raw = form.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }.joined(separator: "&")
        }
        let reply = try await api.send(method, path, token: nil, json: nil, raw: raw, headers: headers)
        for cookie in reply.headers[values: .setCookie] {
            let pair = cookie.split(separator: ";")[0].split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { continue }
            if pair[1].isEmpty || cookie.contains("Max-Age=0") { cookies.removeValue(forKey: pair[0]) } else { cookies[pair[0]] = pair[1] }
        }
        return reply
    }

    /// The CSRF token of the first form of a page.
    static func csrf(_ reply: APIClient.Reply) throws -> String {
        let html = String(decoding: reply.data, as: UTF8.self)
        let match = try #require(html.firstMatch(of: /name="csrf" value="([^"]+)"/))
        return String(match.1)
    }

    static func html(_ reply: APIClient.Reply) -> String { String(decoding: reply.data, as: UTF8.self) }

    /// The problems a page shows (its alert and each field's message), for failure messages.
    static func problems(_ reply: APIClient.Reply) -> [String] {
        html(reply).matches(of: /(field-error|problem)"[^>]*>([^<]+)/).map { String($0.2) }
    }
}

@Suite("Organisations' portal: sessions, CSRF, API keys")
struct OrganisationPortalTests {
    static func signUp(_ browser: inout PortalBrowser, name: String) async throws -> String {
        let page = try await browser.send(.get, "/portal/signup")
        #expect(page.status == .ok && page.headers[.contentType]?.hasPrefix("text/html") == true)
        let email = "\(UUID().uuidString.prefix(8).lowercased())@\(name.lowercased()).example"
        let created = try await browser.send(
            .post, "/portal/signup",
            form: [
                ("csrf", try PortalBrowser.csrf(page)), ("name", name), ("email", email), ("password", "correct horse battery staple"),
            ])
        #expect(created.status == .ok && PortalBrowser.html(created).contains("Check your e-mail"))
        #expect(created.headers[values: .setCookie].first { $0.hasPrefix("d4h_portal=") } == nil)
        // The link in the message opens a page with a button; only the button's POST confirms.
        let token = try await Mailbox.confirmationToken(for: email)
        let confirmPage = try await browser.send(.get, "/portal/confirm?token=\(token)")
        #expect(confirmPage.status == .ok && PortalBrowser.html(confirmPage).contains(token))
        let confirmed = try await browser.send(.post, "/portal/confirm", form: [("csrf", try PortalBrowser.csrf(confirmPage)), ("token", token)])
        #expect(confirmed.status == .seeOther && confirmed.headers[.location] == "/portal")
        let cookie = try #require(confirmed.headers[values: .setCookie].first { $0.hasPrefix("d4h_portal=") })
        #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax") && cookie.contains("Path=/portal"))
        return email
    }

    @Test func signUpCreateAKeySeeItOnceRevokeItAndSignOut() async throws {
        try await TestServer.run { api in
            var acme = PortalBrowser(api)
            _ = try await Self.signUp(&acme, name: "Acme")
            let keysPage = try await acme.send(.get, "/portal/keys")
            #expect(keysPage.status == .ok && PortalBrowser.html(keysPage).contains("No keys yet."))
            #expect(keysPage.headers[.cacheControl] == "no-store")

            // A bad name: 422, the API's message next to the field, nothing created.
            let bad = try await acme.send(.post, "/portal/keys", form: [("csrf", try PortalBrowser.csrf(keysPage)), ("name", "")])
            #expect(bad.status == .unprocessableContent)
            #expect(PortalBrowser.html(bad).contains(#"id="name-error""#) && PortalBrowser.html(bad).contains("No keys yet."))

            let created = try await acme.send(.post, "/portal/keys", form: [("csrf", try PortalBrowser.csrf(keysPage)), ("name", "Nightly import")])
            #expect(created.status == .created)
            let html = PortalBrowser.html(created)
            let key = try #require(html.firstMatch(of: /id="new-key">([^<]+)</)).1
            // The key works on the API, and the list shows its prefix, never the key again.
            #expect(try await api.send(.get, "/api/thirdparties/me", token: String(key)).status == .ok)
            let listed = PortalBrowser.html(try await acme.send(.get, "/portal/keys"))
            #expect(listed.contains("Nightly import") && !listed.contains(String(key)))

            // Another organisation sees none of it, and cannot revoke it.
            var other = PortalBrowser(api)
            _ = try await Self.signUp(&other, name: "Globex")
            let otherPage = try await other.send(.get, "/portal/keys")
            #expect(!PortalBrowser.html(otherPage).contains("Nightly import"))
            let keyId = try #require(listed.firstMatch(of: /data-key="([^"]+)"/)).1
            #expect(
                try await other.send(.post, "/portal/keys/\(keyId)/revoke", form: [("csrf", try PortalBrowser.csrf(otherPage))]).status == .notFound)

            // A form post without the session's token is refused (a page saying so) and changes nothing.
            let refused = try await acme.send(.post, "/portal/keys/\(keyId)/revoke", form: [])
            #expect(refused.status == .forbidden && PortalBrowser.html(refused).contains("This form was not sent from a page of this portal"))
            #expect(
                try await acme.send(.post, "/portal/keys/\(keyId)/revoke", form: [("csrf", try PortalBrowser.csrf(otherPage))]).status == .forbidden)
            #expect(try await api.send(.get, "/api/thirdparties/me", token: String(key)).status == .ok)

            let revoked = try await acme.send(.post, "/portal/keys/\(keyId)/revoke", form: [("csrf", try PortalBrowser.csrf(keysPage))])
            #expect(revoked.status == .seeOther && revoked.headers[.location] == "/portal/keys")
            #expect(try await api.send(.get, "/api/thirdparties/me", token: String(key)).status == .unauthorized)

            // Signing out revokes the session on the server: the old cookie no longer opens a page.
            let session = try #require(acme.cookies["d4h_portal"])
            #expect(try await acme.send(.post, "/portal/logout", form: [("csrf", try PortalBrowser.csrf(keysPage))]).status == .seeOther)
            let replay = try await api.send(.get, "/portal/keys", headers: [.cookie: "d4h_portal=\(session)"])
            #expect(replay.status == .seeOther && replay.headers[.location] == "/portal/login")
        }
    }

    @Test func signInAndSignUpFormsCheckTheirTokenAndShowTheAPIsMessages() async throws {
        try await TestServer.run { api in
            var browser = PortalBrowser(api)
            let email = try await Self.signUp(&browser, name: "Initech")
            var fresh = PortalBrowser(api)
            let login = try await fresh.send(.get, "/portal/login")
            // Without the token (or with a token not matching the cookie): refused.
            #expect(
                try await fresh.send(.post, "/portal/login", form: [("email", email), ("password", "correct horse battery staple")]).status
                    == .forbidden)
            #expect(
                try await api.send(
                    .post, "/portal/login", raw: "csrf=x&email=a&password=b", headers: [.contentType: "application/x-www-form-urlencoded"]
                ).status == .forbidden)
            // Wrong password: the API's problem shown on the form, no session.
            let wrong = try await fresh.send(
                .post, "/portal/login", form: [("csrf", try PortalBrowser.csrf(login)), ("email", email), ("password", "wrong password!!")])
            #expect(wrong.status == .unauthorized && PortalBrowser.html(wrong).contains(#"role="alert""#) && fresh.cookies["d4h_portal"] == nil)
            // A coded form (no browser sends one) is refused, never read as text.
            let coded = try await fresh.send(
                .post, "/portal/login",
                form: [("csrf", try PortalBrowser.csrf(login)), ("email", email), ("password", "correct horse battery staple")],
                headers: [.contentEncoding: "gzip"])
            #expect(coded.status == .unsupportedMediaType && fresh.cookies["d4h_portal"] == nil)
            // Sign-up with bad fields: each message next to its field.
            let signup = try await fresh.send(.get, "/portal/signup")
            let invalid = try await fresh.send(
                .post, "/portal/signup", form: [("csrf", try PortalBrowser.csrf(signup)), ("name", ""), ("email", "nope"), ("password", "short")])
            let html = PortalBrowser.html(invalid)
            #expect(invalid.status == .unprocessableContent)
            #expect(html.contains(#"id="name-error""#) && html.contains(#"id="email-error""#) && html.contains(#"id="password-error""#))
            #expect(html.contains(#"value="nope""#))  // what was typed stays (not the password)
            // Every sign-in page issues a fresh form token: the one of the page before no longer works.
            #expect(
                try await fresh.send(
                    .post, "/portal/login",
                    form: [("csrf", try PortalBrowser.csrf(login)), ("email", email), ("password", "correct horse battery staple")]
                ).status == .forbidden)
            let again = try await fresh.send(.get, "/portal/login")
            let signedIn = try await fresh.send(
                .post, "/portal/login",
                form: [("csrf", try PortalBrowser.csrf(again)), ("email", email), ("password", "correct horse battery staple")])
            #expect(signedIn.status == .seeOther && fresh.cookies["d4h_portal"] != nil)
            #expect(PortalBrowser.html(try await fresh.send(.get, "/portal")).contains("Initech"))
            // No session: pages send the browser to sign in.
            let anonymous = try await api.send(.get, "/portal")
            #expect(anonymous.status == .seeOther && anonymous.headers[.location] == "/portal/login")
        }
    }
}

@Suite("Organisations' portal: webhook")
struct OrganisationPortalWebhookTests {
    @Test func setTheEndpointSeeTheSecretOnceTestRedeliverAndStayWithinTheTenant() async throws {
        try await TestServer.run { api in
            var acme = PortalBrowser(api)
            _ = try await OrganisationPortalTests.signUp(&acme, name: "Acme")
            let empty = try await acme.send(.get, "/portal/webhook")
            #expect(empty.status == .ok && PortalBrowser.html(empty).contains("No deliveries yet."))
            let csrf = try PortalBrowser.csrf(empty)

            let bad = try await acme.send(.post, "/portal/webhook", form: [("csrf", csrf), ("url", "ftp://nowhere")])
            #expect(bad.status == .unprocessableContent && PortalBrowser.html(bad).contains(#"id="url-error""#))

            let set = try await acme.send(.post, "/portal/webhook", form: [("csrf", csrf), ("url", "https://hooks.acme.example/data4help")])
            #expect(set.status == .created)
            let secret = try #require(PortalBrowser.html(set).firstMatch(of: /id="new-secret">([^<]+)</)).1
            let again = PortalBrowser.html(try await acme.send(.get, "/portal/webhook"))
            #expect(again.contains("https://hooks.acme.example/data4help") && !again.contains(String(secret)))

            #expect(try await acme.send(.post, "/portal/webhook/test", form: [("csrf", csrf)]).status == .seeOther)
            let logged = PortalBrowser.html(try await acme.send(.get, "/portal/webhook"))
            let delivery = try #require(logged.firstMatch(of: /data-delivery="([^"]+)"/)).1
            #expect(logged.contains("ping"))
            // Still being delivered (nobody answers at that address): a redelivery is refused, and the page says why.
            let early = try await acme.send(.post, "/portal/webhook/deliveries/\(delivery)/redeliver", form: [("csrf", csrf)])
            #expect(early.status == .conflict && PortalBrowser.html(early).contains(#"role="alert""#), "\(early.status)")

            // Another organisation: no endpoint, no deliveries, no redelivering Acme's.
            var other = PortalBrowser(api)
            _ = try await OrganisationPortalTests.signUp(&other, name: "Globex")
            let theirs = try await other.send(.get, "/portal/webhook")
            #expect(!PortalBrowser.html(theirs).contains("hooks.acme.example") && PortalBrowser.html(theirs).contains("No deliveries yet."))
            #expect(
                try await other.send(.post, "/portal/webhook/deliveries/\(delivery)/redeliver", form: [("csrf", try PortalBrowser.csrf(theirs))])
                    .status == .notFound)
        }
    }
}

@Suite("Organisations' portal: access requests")
struct OrganisationPortalRequestTests {
    @Test func askFollowAndReadTheGrantedData() async throws {
        try await TestServer.run { api in
            var acme = PortalBrowser(api)
            _ = try await OrganisationPortalTests.signUp(&acme, name: "Acme")
            let (person, account) = try await api.individualSession()
            let fiscalCode = try #require(account["fiscalCode"] as? String)
            let page = try await acme.send(.get, "/portal/requests")
            #expect(PortalBrowser.html(page).contains("No requests yet.") && PortalBrowser.html(page).contains(#"value="heartRate""#))
            let csrf = try PortalBrowser.csrf(page)

            // Bad fields: every one named next to its input, what was typed kept, nothing filed.
            let bad = try await acme.send(
                .post, "/portal/requests", form: [("csrf", csrf), ("fiscalCode", "x"), ("dataFrom", "soon"), ("purpose", "Study")])
            let badHTML = PortalBrowser.html(bad)
            #expect(bad.status == .unprocessableContent)
            #expect(
                badHTML.contains(#"id="fiscalCode-error""#) && badHTML.contains(#"id="types-error""#) && badHTML.contains(#"id="dataFrom-error""#))
            #expect(badHTML.contains(">Study</textarea>") && badHTML.contains("No requests yet."))

            let filed = try await acme.send(
                .post, "/portal/requests",
                form: [
                    ("csrf", csrf), ("fiscalCode", fiscalCode), ("types", "heartRate"), ("types", "stepCount"), ("dataFrom", "2026-01-01"),
                    ("purpose", "Cardio study"),
                ])
            #expect(filed.status == .seeOther, "\(PortalBrowser.problems(filed))")
            let location = try #require(filed.headers[.location])
            let pending = PortalBrowser.html(try await acme.send(.get, location))
            #expect(pending.contains(#"id="status">pending<"#) && pending.contains("heartRate stepCount") && pending.contains("2026-01-01T00:00:00"))

            // The individual accepts heart rate only and has data: the page shows the grant and the data.
            let id = String(location.split(separator: "/").last!)
            #expect(
                try await api.send(.put, "/api/users/requests/\(id)", token: person, json: ["decision": "accept", "types": ["heartRate"]]).status
                    == .ok)
            let items: [any Sendable] =
                (0..<60).map { minute in
                    ["type": "heartRate", "value": 60 + minute % 30, "unit": "bpm", "start": "2026-11-20T10:\(String(format: "%02d", minute)):00Z"]
                        as JSONObject
                } + [
                    ["type": "stepCount", "value": 100, "unit": "count", "start": "2026-11-20T10:00:00Z", "end": "2026-11-20T10:01:00Z"] as JSONObject
                ]
            #expect(try await api.send(.post, "/api/users/data", token: person, json: ["items": items]).json["accepted"] as? Int == 61)
            let granted = PortalBrowser.html(try await acme.send(.get, location))
            #expect(granted.contains(#"id="status">granted<"#) && granted.contains(#"id="granted">heartRate"#))
            #expect(granted.components(separatedBy: "<td>heartRate</td>").count - 1 == 50 && !granted.contains("<td>stepCount</td>"))
            let next = try #require(granted.firstMatch(of: /href="([^"]+)" rel="next"/)).1.replacingOccurrences(of: "&amp;", with: "&")
            let older = PortalBrowser.html(try await acme.send(.get, String(next)))
            #expect(older.components(separatedBy: "<td>heartRate</td>").count - 1 == 10)

            // Another organisation: not in its list, and the page is a 404.
            var other = PortalBrowser(api)
            _ = try await OrganisationPortalTests.signUp(&other, name: "Globex")
            #expect(!PortalBrowser.html(try await other.send(.get, "/portal/requests")).contains(fiscalCode))
            // A browser is shown a page, not the API's problem+json.
            let missing = try await other.send(.get, location)
            #expect(missing.status == .notFound && missing.headers[.contentType]?.hasPrefix("text/html") == true)
            #expect(PortalBrowser.html(missing).contains("There is no such request."))
        }
    }
}

@Suite("Organisations' portal: aggregates")
struct OrganisationPortalAggregateTests {
    @Test func queryFormBudgetTableAndChart() async throws {
        let database = try await TestPostgres.shared.migratedDatabase()
        try await TestServer.run(database: database, configure: { $0.aggregateMinimumGroup = 5 }) { api in
            let seeding = Database(configuration: database.clientConfiguration(maximumConnections: 1), logger: TestPostgres.logger)
            try await seeding.whileRunning { try await PopulationSeeder(database: seeding).seed(individuals: 300, days: 40, tag: "portal") }
            var acme = PortalBrowser(api)
            _ = try await OrganisationPortalTests.signUp(&acme, name: "Acme")
            let form = try await acme.send(.get, "/portal/aggregates")
            #expect(PortalBrowser.html(form).contains("today 0 of 2 spent") && PortalBrowser.html(form).contains("No queries yet."))
            let csrf = try PortalBrowser.csrf(form)

            let bad = try await acme.send(
                .post, "/portal/aggregates", form: [("csrf", csrf), ("statistic", "mean"), ("from", "2026-02-30"), ("areas", "Milan")])
            let badHTML = PortalBrowser.html(bad)
            #expect(bad.status == .unprocessableContent)
            for field in ["type", "from", "to", "areas"] { #expect(badHTML.contains(#"id="\#(field)-error""#), "\(field)") }
            #expect(badHTML.contains(#"<option value="mean" selected>"#) && badHTML.contains("today 0 of 2 spent"))

            let today = Date()
            let from = ISO8601DateFormatter.string(from: today.addingTimeInterval(-29 * 86_400), timeZone: .gmt, formatOptions: .withFullDate)
            let to = ISO8601DateFormatter.string(from: today, timeZone: .gmt, formatOptions: .withFullDate)
            let answered = try await acme.send(
                .post, "/portal/aggregates",
                form: [
                    ("csrf", csrf), ("type", "stepCount"), ("statistic", "mean"), ("from", from), ("to", to), ("groupBy", "sex"), ("epsilon", "0.6"),
                ])
            let html = PortalBrowser.html(answered)
            #expect(answered.status == .created)
            #expect(
                html.contains("Budget before: ε 1 at most per query; today 0 of 2 spent")
                    && html.contains("Budget after: ε 1 at most per query; today 0.60 of 2 spent"))
            // One bar and one error bar per group, and the same groups in the table.
            let bars = html.components(separatedBy: #"class="bar""#).count - 1
            #expect(bars >= 2 && html.components(separatedBy: #"class="error-bar""#).count - 1 == bars)
            #expect(html.components(separatedBy: "<tr><td>").count - 1 == bars)
            #expect(
                html.contains(#"<svg xmlns="http://www.w3.org/2000/svg" class="chart""#)
                    && html.contains("<title id=\"chart-title\">mean of stepCount"))

            let list = PortalBrowser.html(try await acme.send(.get, "/portal/aggregates"))
            let link = try #require(list.firstMatch(of: /href="(\/portal\/aggregates\/[^"]+)"/)).1
            #expect(PortalBrowser.html(try await acme.send(.get, String(link))).contains("Budget now:"))
            var other = PortalBrowser(api)
            _ = try await OrganisationPortalTests.signUp(&other, name: "Globex")
            #expect(try await other.send(.get, String(link)).status == .notFound)
            #expect(PortalBrowser.html(try await other.send(.get, "/portal/aggregates")).contains("No queries yet."))
        }
    }
}
