import DatabaseLink
import DatabaseTestSupport
import Foundation
import HTTPAPI
import HTTPTypes
import HummingbirdTesting
import Synchronization
import Testing

/// The portals in a real browser (headless Chromium over the DevTools protocol): an
/// organisation and an individual, each in a browser of their own, go through the whole flow
/// with the page's own forms; the assertions are on the DOM.
@Suite("The portals in a real browser (headless Chromium)")
struct PortalBrowserTests {
    /// A JavaScript string literal.
    static func js(_ text: String) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: [text], options: [.fragmentsAllowed]), as: UTF8.self).dropFirst().dropLast()
            .description
    }

    /// Fills the form whose action is `action` (text fields by name, checkboxes by `name=value`),
    /// submits it with its button `button` (or the first) and waits for the page it leads to.
    static func submit(
        _ session: DevToolsSession, _ action: String, fields: [(String, String)] = [], ticks: [(String, String)] = [], button: String? = nil
    ) async throws {
        var script = "(() => { const f = document.querySelector('form[action=\(js(action))]'); if (!f) return false;"
        for (name, value) in fields { script += " f.elements[\(js(name))].value = \(js(value));" }
        for (name, value) in ticks { script += " f.querySelector('input[name=' + \(js(name)) + '][value=' + \(js(value)) + ']').checked = true;" }
        script += button.map { " f.requestSubmit(f.querySelector(\(js($0))));" } ?? " f.requestSubmit();"
        script += " return true; })()"
        try await session.navigating("submitting the form \(action)") {
            let done = try await session.evaluate(script, as: Bool.self)
            guard done else { throw HeadlessChromium.BrowserError("no form \(action) at \(session.url)") }
        }
    }

    /// Signs an organisation up as a person does: the form, the "check your e-mail" page, the link
    /// from the mailbox, its confirm button; ends signed in on `/portal`.
    static func signUp(_ session: DevToolsSession, name: String, email: String) async throws {
        try await submit(session, "/portal/signup", fields: [("name", name), ("email", email), ("password", "correct horse battery staple")])
        try await text(session, at: "/portal/signup", of: "#check-title") { $0 == "Check your e-mail" }
        let token = try await Mailbox.confirmationToken(for: email)
        try await go(session, "/portal/confirm?token=\(token)")
        try await text(session, at: "/portal/confirm", of: "h1")
        try await submit(session, "/portal/confirm")
    }

    /// Signs an individual in on `/me/login` as a person does; ends on `/me`.
    static func signInToMe(_ session: DevToolsSession, email: String) async throws {
        try await text(session, at: "/me/login", of: "h1")
        try await submit(session, "/me/login", fields: [("email", email), ("password", Fixtures.password)])
        try await text(session, at: "/me", of: "h1")
    }

    /// Chooses the file at `path` in the file input `selector`, as the browser's file chooser
    /// would (the DevTools protocol); the page gets its `change` event.
    static func chooseFile(_ session: DevToolsSession, _ selector: String, _ path: String) async throws {
        let document = try await session.call("DOM.getDocument", ["depth": 0])
        let root = try #require((document["root"] as? [String: Any])?["nodeId"] as? Int)
        let input = try #require(try await session.call("DOM.querySelector", ["nodeId": root, "selector": selector])["nodeId"] as? Int)
        _ = try await session.call("DOM.setFileInputFiles", ["nodeId": input, "files": [path]])
    }

    static func go(_ session: DevToolsSession, _ path: String) async throws {
        try await session.navigate(to: path)
    }

    /// Waits until a page whose path starts with `path` shows `selector` with text `matching`,
    /// and answers the text.
    @discardableResult
    static func text(
        _ session: DevToolsSession, at path: String, of selector: String, timeout: Duration = .seconds(20),
        matching: @escaping (String) -> Bool = { _ in true }
    ) async throws -> String {
        let expression =
            "(location.pathname + location.search).startsWith(\(js(path))) && document.readyState === 'complete' && document.querySelector(\(js(selector))) ? document.querySelector(\(js(selector))).textContent.trim() : null"
        return try await session.wait(for: expression, timeout: timeout) { ($0 as? String).map(matching) ?? false } as? String ?? ""
    }

    /// Opens each page at a phone's width and checks it: one `h1`, a label (or `aria-label`) for
    /// every visible input, and nothing wider than the screen.
    static func checkPhoneWidthAndLabels(_ session: DevToolsSession, pages: [String]) async throws {
        _ = try await session.call("Emulation.setDeviceMetricsOverride", ["width": 375, "height": 800, "deviceScaleFactor": 2, "mobile": true])
        for page in pages {
            try await go(session, page)
            try await text(session, at: page, of: "h1")
            let report = try await session.evaluate(
                """
                JSON.stringify({
                  h1: document.querySelectorAll('h1').length,
                  unlabelled: [...document.querySelectorAll('input:not([type=hidden]), select, textarea')]
                    .filter(e => e.labels.length === 0 && !e.getAttribute('aria-label')).map(e => e.name || e.id),
                  width: document.documentElement.scrollWidth
                })
                """, as: String.self)
            let parsed = try #require(try JSONSerialization.jsonObject(with: Data(report.utf8)) as? [String: Any], "\(page): \(report)")
            #expect(parsed["h1"] as? Int == 1, "\(page): \(report)")
            #expect((parsed["unlabelled"] as? [Any])?.isEmpty == true, "\(page): \(report)")
            #expect((parsed["width"] as? Int ?? 9_999) <= 375, "\(page): \(report)")
        }
    }

    static func count(_ session: DevToolsSession, _ selector: String) async throws -> Int {
        try await session.evaluate("document.querySelectorAll(\(js(selector))).length", as: Int.self)
    }

    @Test(.timeLimit(.minutes(20))) func signUpKeyRequestAcceptDataAndAnAggregateChart() async throws {
        let database = try await TestPostgres.shared.migratedDatabase()
        try await TestServer.run(database: database, configure: { $0.aggregateMinimumGroup = 5 }) { api in
            let seeding = Database(configuration: database.clientConfiguration(maximumConnections: 1), logger: TestPostgres.logger)
            try await seeding.whileRunning { try await PopulationSeeder(database: seeding).seed(individuals: 200, days: 10, tag: "browser") }
            let (person, account) = try await api.individualSession()
            _ = try await api.send(
                .post, "/api/users/data", token: person,
                json: ["items": [["type": "heartRate", "value": 71, "unit": "bpm", "start": "2026-11-20T10:00:00Z"] as JSONObject]])
            // A watch rule, so that its page is checked at phone width too.
            let rule = try #require(try await api.send(.post, "/api/users/rule-templates/lowHeartRate/adopt", token: person).json["id"] as? String)
            let base = "http://127.0.0.1:\(try #require(api.client.port))"
            let fiscalCode = try #require(account["fiscalCode"] as? String), email = try #require(account["email"] as? String)
            let organisation = try await HeadlessChromium(), individual = try await HeadlessChromium()
            defer { organisation.stop(); individual.stop() }
            let found = Mutex<(request: String, key: String)>(("", ""))

            // The organisation signs up, creates a key and asks for the individual's heart rate.
            try await organisation.withPage("\(base)/portal/signup") { session in
                try await Self.text(session, at: "/portal/signup", of: "h1")
                try await Self.signUp(session, name: "Cardio Lab", email: "lab-\(UUID().uuidString.prefix(6).lowercased())@cardio.example")
                try await Self.text(session, at: "/portal", of: "header form span") { $0 == "Cardio Lab" }
                try await Self.go(session, "/portal/keys")
                try await Self.text(session, at: "/portal/keys", of: "h1")
                try await Self.submit(session, "/portal/keys", fields: [("name", "Nightly import")])
                let key = try await Self.text(session, at: "/portal/keys", of: "#new-key") { $0.hasPrefix("d4hk_") }
                #expect(try await session.evaluate("document.querySelector('#keys tbody tr td').textContent", as: String.self) == "Nightly import")

                // A POST from a script of this very page, with the session cookie but without the form token: refused.
                let status = try await session.evaluate(
                    "fetch('/portal/keys', {method: 'POST', body: new URLSearchParams({name: 'sneaky'})}).then(r => r.status)", as: Int.self)
                #expect(status == 403)

                try await Self.go(session, "/portal/requests")
                try await Self.text(session, at: "/portal/requests", of: "h1")
                try await Self.submit(
                    session, "/portal/requests", fields: [("fiscalCode", fiscalCode), ("purpose", "Resting heart rate study")],
                    ticks: [("types", "heartRate")])
                try await Self.text(session, at: "/portal/requests/", of: "#status") { $0 == "pending" }
                let path = try await session.evaluate("location.pathname", as: String.self)
                found.withLock { $0 = (String(path.split(separator: "/").last ?? ""), key) }
            }
            let (request, key) = found.withLock { $0 }

            // The individual, in a browser of their own, signs in and accepts.
            try await individual.withPage("\(base)/me/login") { session in
                try await Self.text(session, at: "/me/login", of: "h1")
                try await Self.submit(session, "/me/login", fields: [("email", email), ("password", Fixtures.password)])
                try await Self.text(session, at: "/me", of: "form[data-request=\(Self.js(request))] h3") { $0 == "Cardio Lab" }
                try await Self.submit(session, "/me/requests/\(request)/decision", button: "button[value=accept]")
                try await Self.text(session, at: "/me", of: "#granted tbody tr td") { $0 == "Cardio Lab" }
                // The grant changed from the page: "Change" opened, an end to the access set.
                let end = ISO8601DateFormatter.string(from: Date().addingTimeInterval(30 * 86_400), timeZone: .gmt, formatOptions: .withFullDate)
                _ = try await session.evaluate(
                    "document.querySelector('form[data-change=\(Self.js(request))]').closest('details').querySelector('summary').click(); true",
                    as: Bool.self)
                #expect(try await session.evaluate("document.querySelector('#granted details').open", as: Bool.self))
                try await Self.submit(session, "/me/requests/\(request)/change", fields: [("accessUntil", end)])
                try await Self.text(session, at: "/me", of: "#granted tbody tr td:nth-child(2)") { $0.contains("access until \(end)") }
                try await Self.checkPhoneWidthAndLabels(
                    session,
                    pages: [
                        "/me", "/me/access-log", "/me/health", "/me/health?period=week", "/me/sos", "/me/rules", "/me/rules/\(rule)", "/me/alerts",
                        "/me/carers",
                        "/me/caring", "/me/runs", "/me/runs/new",
                    ])
                // This browser has no organisation's session: the portal sends it to sign in.
                try await Self.go(session, "/portal/keys")
                try await Self.text(session, at: "/portal/login", of: "h1") { $0 == "Sign in" }
            }

            // Back in the organisation's browser: granted, and the data is on the page.
            try await organisation.withPage("\(base)/portal/requests/\(request)") { session in
                try await Self.text(session, at: "/portal/requests/", of: "#status") { $0 == "granted" }
                try await Self.text(session, at: "/portal/requests/", of: "#samples tbody tr td:nth-child(2)") { $0.hasPrefix("71") }
                #expect(try await Self.count(session, "#samples tbody tr") == 1)

                // An aggregate: the answer's table and chart, one bar and one error bar per group.
                try await Self.go(session, "/portal/aggregates")
                try await Self.text(session, at: "/portal/aggregates", of: "#budget")
                let to = ISO8601DateFormatter.string(from: Date(), timeZone: .gmt, formatOptions: .withFullDate)
                let from = ISO8601DateFormatter.string(from: Date().addingTimeInterval(-8 * 86_400), timeZone: .gmt, formatOptions: .withFullDate)
                #expect(
                    try await session.evaluate(
                        """
                        (() => { const f = document.querySelector('form[action="/portal/aggregates"]');
                          f.elements.type.value = 'stepCount'; f.elements.statistic.value = 'mean'; f.elements.groupBy.value = 'sex'; return true })()
                        """, as: Bool.self))
                try await Self.submit(session, "/portal/aggregates", fields: [("from", from), ("to", to), ("epsilon", "0.5")])
                try await Self.text(session, at: "/portal/aggregates", of: "#answer-status") { $0.hasPrefix("Status: answered") }
                let heading = try await Self.text(session, at: "/portal/aggregates", of: "#query-title")
                #expect(heading.hasSuffix("by sex"), "\(heading)")
                let bars = try await Self.count(session, "svg.chart rect.bar")
                let errorBars = try await Self.count(session, "svg.chart path.error-bar"), rows = try await Self.count(session, "#answer tbody tr")
                #expect(bars >= 1 && errorBars == bars && rows == bars, "\(bars) bars, \(errorBars) error bars, \(rows) rows")
                let screenshot = try await session.call("Page.captureScreenshot", ["format": "png"])
                if let data = (screenshot["data"] as? String).flatMap({ Data(base64Encoded: $0) }) {
                    try? data.write(to: FileManager.default.temporaryDirectory.appendingPathComponent("data4help-portal-aggregate.png"))
                }
                try await Self.checkPhoneWidthAndLabels(
                    session,
                    pages: [
                        "/portal", "/portal/keys", "/portal/requests", "/portal/requests/\(request)", "/portal/aggregates", "/portal/webhook",
                    ])
                // This browser has no individual's session: /me sends it to sign in.
                try await Self.go(session, "/me")
                try await Self.text(session, at: "/me/login", of: "h1") { $0 == "Sign in" }

                // Signed out and up again as another organisation: none of Cardio Lab's keys or
                // requests show, and its request's page is a "no such request" page.
                try await Self.go(session, "/portal")
                try await Self.text(session, at: "/portal", of: "header form span") { $0 == "Cardio Lab" }
                try await Self.submit(session, "/portal/logout")
                try await Self.text(session, at: "/portal/login", of: "h1") { $0 == "Sign in" }
                try await Self.go(session, "/portal/signup")
                try await Self.text(session, at: "/portal/signup", of: "h1")
                try await Self.signUp(session, name: "Other Lab", email: "other-\(UUID().uuidString.prefix(6).lowercased())@lab.example")
                try await Self.text(session, at: "/portal", of: "header form span") { $0 == "Other Lab" }
                try await Self.go(session, "/portal/keys")
                try await Self.text(session, at: "/portal/keys", of: "#main p:last-of-type") { $0 == "No keys yet." }
                try await Self.go(session, "/portal/requests")
                try await Self.text(session, at: "/portal/requests", of: "#list-title + p") { $0 == "No requests yet." }
                try await Self.go(session, "/portal/requests/\(request)")
                try await Self.text(session, at: "/portal/requests/", of: "#problem") { $0 == "There is no such request." }
            }

            // The key made in the browser works on the API, on the granted data.
            let pulled = try await api.send(.get, "/api/thirdparties/requests/\(request)/data", token: key)
            #expect(pulled.status == .ok && pulled.items.count == 1)
        }
    }
}
