import AccessManager
import DatabaseLink
import DatabaseTestSupport
import Foundation
import HTTPAPI
import HTTPTypes
import PostgresNIO
import Testing

/// Rate limits per credential, the sign-in throttle per account and per address, and the
/// request timeout.
@Suite("Limits: rate limits, sign-in throttling, request timeouts")
struct LimitsTests {
    @Test func eachCredentialHasItsOwnBucketWithStandardHeaders() async throws {
        try await TestServer.run(configure: {
            // An hour's window: one request refills in 12 minutes, so the counts below hold however
            // slowly a loaded machine sends them (with 60 s, 12 s apart refilled one, seen once).
            $0.rateLimitRequests = 5
            $0.rateLimitWindow = .seconds(3_600)
        }) { api in
            let (first, _) = try await api.individualSession()
            let (second, _) = try await api.individualSession()
            for expected in (0..<5).reversed() {
                let reply = try await api.send(.get, "/api/users/me", token: first)
                #expect(reply.status == .ok)
                #expect(reply.headers[HTTPField.Name("RateLimit-Limit")!] == "5")
                #expect(reply.headers[HTTPField.Name("RateLimit-Remaining")!] == String(expected))
                #expect(reply.headers[HTTPField.Name("RateLimit-Policy")!] == "5;w=3600")
            }
            let limited = try await api.send(.get, "/api/users/me", token: first)
            #expect(limited.status == .tooManyRequests)
            #expect(limited.headers[.contentType] == "application/problem+json")
            #expect(limited.string("type")?.hasSuffix("rate-limited") == true)
            // One request refills in 3600/5 = 720 s.
            #expect((1...720).contains(Int(limited.headers[.retryAfter] ?? "") ?? 0))
            #expect(limited.headers[HTTPField.Name("RateLimit-Remaining")!] == "0")
            // Another person's token is not affected; nor is a third party's API key by its session.
            #expect(try await api.send(.get, "/api/users/me", token: second).status == .ok)
            let (party, _) = try await api.thirdPartySession()
            let key = try await api.send(.post, "/api/thirdparties/keys", token: party, json: ["name": "limits"])
            let secret = try #require(key.string("key") ?? key.string("secret"))
            for _ in 0..<3 { _ = try await api.send(.get, "/api/thirdparties/me", token: party) }
            #expect(try await api.send(.get, "/api/thirdparties/me", token: secret).headers[HTTPField.Name("RateLimit-Remaining")!] == "4")
        }
    }

    @Test func portalPagesSpendFromTheSessionsBucket() async throws {
        try await TestServer.run(configure: {
            $0.rateLimitRequests = 4
            $0.rateLimitWindow = .seconds(3_600)  // no refill within the test, however slow (see above)
        }) { api in
            let (_, account) = try await api.individualSession()
            var me = try await IndividualPortalTests.signIn(api, account)
            for expected in (0..<4).reversed() {
                let page = try await me.send(.get, "/me")
                #expect(page.status == .ok)
                #expect(page.headers[HTTPField.Name("RateLimit-Remaining")!] == String(expected))
            }
            let limited = try await me.send(.get, "/me")
            #expect(limited.status == .tooManyRequests)
            #expect(limited.headers[.contentType]?.hasPrefix("text/html") == true)  // a page, like every portal error
            #expect((1...900).contains(Int(limited.headers[.retryAfter] ?? "") ?? 0))
            #expect(PortalBrowser.html(limited).contains("Too many requests"))
        }
    }

    @Test func signInIsThrottledPerAccountAndPerAddressAcrossTheWindow() async throws {
        let database = try await TestPostgres.shared.migratedDatabase()
        try await TestServer.run(
            database: database,
            configure: {
                $0.loginThrottle.perAccount = 3
                $0.loginThrottle.perAddress = 5
                $0.loginThrottle.window = .seconds(600)
                $0.trustProxyHeaders = true
            }
        ) { api in
            let (_, victim) = try await api.individualSession()
            let email = try #require(victim["email"] as? String)
            func login(_ password: String, from address: String, email: String = email) async throws -> APIClient.Reply {
                try await api.send(
                    .post, "/api/users/login", json: ["email": email, "password": password],
                    headers: [
                        HTTPField.Name("X-Forwarded-For")!: "203.0.113.250, \(address)"
                    ])
            }
            // Three failures on one account, from three addresses: the account is closed, even to
            // the right password, before any password is checked.
            for address in ["198.51.100.1", "198.51.100.2", "198.51.100.3"] {
                #expect(try await login("wrong password 1", from: address).status == .unauthorized)
            }
            let closed = try await login(Fixtures.password, from: "198.51.100.4")
            #expect(closed.status == .tooManyRequests)
            #expect(closed.string("type")?.hasSuffix("login-throttled") == true)
            #expect((500...600).contains(Int(closed.headers[.retryAfter] ?? "") ?? 0))

            // Five failures from one address over different accounts close the address, not the accounts.
            var others: [String] = []
            for _ in 0..<3 { others.append(try #require(try await api.individualSession().account["email"] as? String)) }
            for index in 0..<5 {
                #expect(try await login("wrong", from: "192.0.2.7", email: others[index % 3]).status == .unauthorized)
            }
            #expect(try await login(Fixtures.password, from: "192.0.2.7", email: others[0]).status == .tooManyRequests)
            #expect(try await login(Fixtures.password, from: "192.0.2.8", email: others[0]).status == .ok)

            // Only digests are stored: no email or address in clear.
            let stored = Database(configuration: database.clientConfiguration(maximumConnections: 1), logger: TestPostgres.logger)
            try await stored.whileRunning {
                let keys = try await stored.query("SELECT key_digest FROM login_failures").map { try $0.decode(String.self) }
                #expect(keys.count >= 5 && keys.allSatisfy { $0.count == 64 && !$0.contains("@") && !$0.contains(".") })
            }
        }
    }

    @Test func aCorrectPasswordClearsTheAccountsFailures() async throws {
        try await TestServer.run(configure: { $0.loginThrottle.perAccount = 3 }) { api in
            let (_, account) = try await api.individualSession()
            let email = try #require(account["email"] as? String)
            for _ in 0..<2 { _ = try await api.send(.post, "/api/users/login", json: ["email": email, "password": "wrong wrong"]) }
            #expect(try await api.send(.post, "/api/users/login", json: ["email": email, "password": Fixtures.password]).status == .ok)
            for _ in 0..<2 { _ = try await api.send(.post, "/api/users/login", json: ["email": email, "password": "wrong wrong"]) }
            #expect(try await api.send(.post, "/api/users/login", json: ["email": email, "password": Fixtures.password]).status == .ok)
        }
    }

    @Test func aRequestOverItsTimeIsAbandonedWith503AndLeavesNothingWritten() async throws {
        let database = try await TestPostgres.shared.migratedDatabase()
        try await TestServer.run(database: database, configure: { $0.requestTimeout = .milliseconds(5) }) { api in
            // Registration hashes the password with Argon2id first, which takes longer than 5 ms.
            let reply = try await api.send(.post, "/api/users/registration", json: Fixtures.individual())
            #expect(reply.status == .serviceUnavailable)
            #expect(reply.string("type")?.hasSuffix("request-timeout") == true)
            #expect(reply.headers[.retryAfter] == "1")
            try await Task.sleep(for: .milliseconds(500))
            let stored = Database(configuration: database.clientConfiguration(maximumConnections: 1), logger: TestPostgres.logger)
            try await stored.whileRunning {
                let count = try await stored.query("SELECT count(*)::int8 FROM individuals").first?.decode(Int64.self)
                #expect(count == 0)
            }
            // Quick requests are unaffected — when the machine lets one be quick: with a 5 ms
            // limit a loaded machine can stall even /healthz past it (seen once), so the first of
            // up to 100 tries that finishes in time must be a plain 200.
            var answered = false
            for _ in 0..<100 where !answered {
                let status = try await api.send(.get, "/healthz").status
                #expect(status == .ok || status == .serviceUnavailable)
                answered = status == .ok
            }
            #expect(answered)
        }
    }

    /// The server closes a kept-alive connection that stays idle past `HTTP_IDLE_TIMEOUT_SECONDS`;
    /// the tests' client then connects again (a browser test once went 75 s between two API
    /// requests on a loaded machine and failed with "I/O on closed channel").
    @Test func anIdleConnectionIsClosedByTheServerAndTheClientConnectsAgain() async throws {
        try await TestServer.run(configure: { $0.idleTimeout = .seconds(1) }) { api in
            #expect(try await api.send(.get, "/healthz").status == .ok)
            try await Task.sleep(for: .seconds(3))  // past the idle timeout: the server closes the connection
            #expect(try await api.send(.get, "/healthz").status == .ok)
        }
    }
}
