import DatabaseTestSupport
import Foundation
import HTTPAPI
import HTTPTypes
import Testing

/// Share links: a person shares chosen types over a window with someone who has no account, by
/// `/s/{token}` — hashed token, optional PIN, revocable, at most 30 days, every opening logged,
/// never indexed or sent as a referrer.
@Suite("Share links and the doctor's page")
struct ShareLinkTests {
    static func iso(_ date: Date) -> String { ISO8601DateFormatter().string(from: date) }

    static let readings: [any Sendable] = (0..<6).map { index in
        ["type": "heartRate", "value": 60 + index * 2, "start": "2026-11-2\(index / 2)T0\(index % 2 + 8):00:00Z"] as JSONObject
    }

    static func link(_ extra: [String: any Sendable] = [:]) -> [String: any Sendable] {
        var body: [String: any Sendable] = [
            "label": "Dr Rossi, cardiology", "types": ["heartRate", "stepCount"], "dataFrom": "2026-11-19T00:00:00Z",
            "dataTo": "2026-11-26T00:00:00Z", "expiresAt": iso(Date().addingTimeInterval(7 * 86_400)),
        ]
        body.merge(extra) { $1 }
        return body
    }

    /// The token of a link's URL.
    static func token(_ reply: APIClient.Reply) throws -> String {
        let url = try #require(reply.string("url"))
        return String(try #require(url.split(separator: "/s/").last))
    }

    @Test func aLinkShowsTheChosenDataToItsHolderAndEveryViewIsLogged() async throws {
        let database = try await TestPostgres.shared.migratedDatabase()
        try await TestServer.run(database: database) { api in
            let (person, _) = try await api.individualSession(["fullName": "Ada Bianchi"])
            _ = try await api.send(.post, "/api/users/data", token: person, json: ["items": Self.readings])
            let created = try await api.send(.post, "/api/users/share-links", token: person, json: Self.link())
            #expect(created.status == .created && created.string("status") == "active", "\(created.json)")
            let token = try Self.token(created)
            #expect(token.hasPrefix("d4hs_") && token.count == 48)
            let id = try #require(created.string("id"))
            // Only the SHA-256 of the token is kept.
            #expect(
                try await OfferTests.sql(database, "SELECT count(*) FROM share_links WHERE token_hash = sha256(convert_to('\(token)', 'UTF8'))") == 1)
            #expect(try await api.send(.get, "/api/users/share-links/\(id)", token: person).json["url"] == nil)

            let page = try await api.send(.get, "/s/\(token)")
            let html = String(decoding: page.data, as: UTF8.self)
            #expect(page.status == .ok)
            #expect(html.contains("Health data of Ada Bianchi") && html.contains("<svg") && html.contains("@media print"))
            #expect(page.headers[HTTPField.Name("X-Robots-Tag")!] == "noindex, nofollow, noarchive")
            #expect(page.headers[HTTPField.Name("Referrer-Policy")!] == "no-referrer")
            #expect(page.headers[.cacheControl] == "no-store")
            #expect(html.contains(#"<meta name="robots" content="noindex, nofollow, noarchive">"#))

            let detail = try await api.send(.get, "/api/users/share-links/\(id)", token: person)
            #expect(detail.json["viewCount"] as? Int == 1)
            let views = try #require(detail.json["views"] as? [[String: Any]])
            #expect(views.count == 1 && views[0]["outcome"] as? String == "shown" && (views[0]["addressDigest"] as? String)?.count == 16)
            let log = try await api.send(.get, "/api/users/access-log", token: person)
            let entry = try #require(log.items.first)
            #expect(
                (entry["shareLink"] as? [String: Any])?["label"] as? String == "Dr Rossi, cardiology" && entry["channel"] as? String == "share_link")
            #expect(entry["types"] as? [String] == ["heartRate", "stepCount"] && entry["itemCount"] as? Int == 3)

            // Unknown, malformed, revoked and expired links all get one and the same page.
            let unknown = try await api.send(.get, "/s/d4hs_" + String(repeating: "A", count: 43))
            let malformed = try await api.send(.get, "/s/x")
            #expect(unknown.status == .notFound && malformed.status == .notFound && unknown.data == malformed.data)
            let (stranger, _) = try await api.individualSession()
            #expect(try await api.send(.delete, "/api/users/share-links/\(id)", token: stranger).status == .notFound)
            #expect(try await api.send(.get, "/api/users/share-links/\(id)", token: stranger).status == .notFound)
            #expect(try await api.send(.delete, "/api/users/share-links/\(id)", token: person).status == .noContent)
            let revoked = try await api.send(.get, "/s/\(token)")
            #expect(revoked.status == .notFound && revoked.data == unknown.data)
            #expect(try await api.send(.get, "/api/users/share-links/\(id)", token: person).string("status") == "revoked")

            let second = try Self.token(try await api.send(.post, "/api/users/share-links", token: person, json: Self.link()))
            try await OfferTests.sql(
                database,
                "UPDATE share_links SET expires_at = now() - interval '1 second' WHERE token_hash = sha256(convert_to('\(second)', 'UTF8')) RETURNING 1::int8"
            )
            #expect(try await api.send(.get, "/s/\(second)").data == unknown.data)

            // At most 30 days, a window of numbers, a PIN of digits.
            let bad = try await api.send(
                .post, "/api/users/share-links", token: person,
                json: Self.link(["expiresAt": Self.iso(Date().addingTimeInterval(31 * 86_400)), "types": ["location"], "pin": "12ab"]))
            #expect(Set(bad.problemFields) == ["expiresAt", "types", "pin"])
            #expect(
                try await api.send(.post, "/api/users/share-links", token: person, json: Self.link(["dataTo": "2026-11-18T00:00:00Z"])).problemFields
                    == ["dataTo"])
        }
    }

    @Test func aPinGuardsTheDataAndTenWrongPinsLockTheLink() async throws {
        try await TestServer.run { api in
            let (person, _) = try await api.individualSession()
            _ = try await api.send(.post, "/api/users/data", token: person, json: ["items": Self.readings])
            let created = try await api.send(.post, "/api/users/share-links", token: person, json: Self.link(["pin": "2468"]))
            #expect(created.json["pin"] as? Bool == true)
            let token = try Self.token(created)
            let form = try await api.send(.get, "/s/\(token)")
            let formHTML = String(decoding: form.data, as: UTF8.self)
            #expect(form.status == .ok && formHTML.contains("pin-form") && !formHTML.contains("<svg"))
            let formHeaders: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
            let wrong = try await api.send(.post, "/s/\(token)", raw: "pin=1111", headers: formHeaders)
            #expect(wrong.status == .unprocessableContent && String(decoding: wrong.data, as: UTF8.self).contains("9 tries left"))
            let right = try await api.send(.post, "/s/\(token)", raw: "pin=2468", headers: formHeaders)
            #expect(right.status == .ok && String(decoding: right.data, as: UTF8.self).contains("<svg"))
            for _ in 0..<9 { _ = try await api.send(.post, "/s/\(token)", raw: "pin=0000", headers: formHeaders) }
            #expect(try await api.send(.post, "/s/\(token)", raw: "pin=2468", headers: formHeaders).status == .forbidden)
            let id = try #require(created.string("id"))
            let detail = try await api.send(.get, "/api/users/share-links/\(id)", token: person)
            #expect(detail.string("status") == "locked" && detail.json["viewCount"] as? Int == 1)
            let outcomes = (detail.json["views"] as? [[String: Any]] ?? []).compactMap { $0["outcome"] as? String }
            #expect(outcomes.filter { $0 == "wrong_pin" }.count == 10 && outcomes.first == "locked")
        }
    }

    @Test func oneAddressIsLimitedPerMinute() async throws {
        // One a minute here (30 by default), so that even a slow machine cannot refill the bucket
        // between two requests: the second within the minute is 429 with Retry-After. (The token
        // bucket itself is tested with a clock of its own in LimitsTests.)
        try await TestServer.run(configure: { $0.sharePageRequestsPerMinute = 1 }) { api in
            #expect(try await api.send(.get, "/s/d4hs_nothing").status == .notFound)
            let limited = try await api.send(.get, "/s/d4hs_nothing")
            #expect(limited.status == .tooManyRequests && limited.headers[.retryAfter] != nil)
            #expect(String(decoding: limited.data, as: UTF8.self).contains("Too many pages"))
        }
    }
}
