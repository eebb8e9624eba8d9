import Foundation
import HTTPAPI
import HTTPTypes
import Testing

@Suite("Login, tokens and logout on both surfaces")
struct SessionTests {
    @Test func loginWithJSONOrBasicIssuesAWorkingToken() async throws {
        try await TestServer.run { api in
            let account = Fixtures.individual()
            try await api.registerAndConfirm(surface: "users", account)
            let json = try await api.send(.post, "/api/users/login", json: ["email": account["email"]!, "password": Fixtures.password])
            #expect(json.status == .ok)
            #expect(json.string("token")?.hasPrefix("d4ht_") == true)
            #expect(json.string("expiresAt") != nil)
            #expect(json.headers[.cacheControl] == "no-store")
            let basic = "\(account["email"]!):\(Fixtures.password)".data(using: .utf8)!.base64EncodedString()
            let viaBasic = try await api.send(.post, "/api/users/login", headers: [.authorization: "Basic \(basic)"])
            #expect(viaBasic.status == .ok)
            let me = try await api.send(.get, "/api/users/me", token: viaBasic.string("token"))
            #expect(me.status == .ok)
            #expect(me.string("email") == account["email"] as? String)
        }
    }

    @Test func wrongPasswordAndUnknownEmailFailAlike() async throws {
        try await TestServer.run { api in
            let (_, account) = try await api.individualSession()
            let wrong = try await api.send(.post, "/api/users/login", json: ["email": account["email"]!, "password": "not the password"])
            let unknown = try await api.send(.post, "/api/users/login", json: ["email": "nobody@example.org", "password": "not the password"])
            for reply in [wrong, unknown] {
                #expect(reply.status == .unauthorized)
                #expect(reply.headers[.wwwAuthenticate]?.hasPrefix("Basic") == true)
            }
            #expect(wrong.string("detail") == unknown.string("detail"))
            #expect(wrong.string("type") == unknown.string("type"))
            let incomplete = try await api.send(.post, "/api/users/login", json: ["email": account["email"]!])
            #expect(incomplete.problemFields == ["password"])
        }
    }

    @Test func tokensExpire() async throws {
        try await TestServer.run(configure: { $0.tokenLifetime = .seconds(10) }) { api in
            // The token was issued between these two instants, whatever the load.
            let before = ContinuousClock.now
            let (token, _) = try await api.individualSession()
            let after = ContinuousClock.now
            let live = try await api.send(.get, "/api/users/me", token: token)
            if ContinuousClock.now < before + .seconds(9) { #expect(live.status == .ok) }  // surely within its lifetime
            try await Task.sleep(until: after + .seconds(10.5))
            let expired = try await api.send(.get, "/api/users/me", token: token)
            #expect(expired.status == .unauthorized)
        }
    }

    @Test func logoutEndsOnlyThatToken() async throws {
        try await TestServer.run { api in
            let (first, account) = try await api.individualSession()
            let second = try await api.send(.post, "/api/users/login", json: ["email": account["email"]!, "password": Fixtures.password]).string(
                "token")
            #expect(try await api.send(.post, "/api/users/logout", token: first).status == .noContent)
            #expect(try await api.send(.get, "/api/users/me", token: first).status == .unauthorized)
            #expect(try await api.send(.get, "/api/users/me", token: second).status == .ok)
        }
    }

    @Test func tokensAreListedAndRevocableByTheirOwnerOnly() async throws {
        try await TestServer.run { api in
            let (current, account) = try await api.individualSession()
            let other = try await api.send(.post, "/api/users/login", json: ["email": account["email"]!, "password": Fixtures.password])
            let listing = try await api.send(.get, "/api/users/tokens", token: current)
            #expect(listing.status == .ok)
            #expect(listing.items.count == 2)
            #expect(listing.items.filter { $0["current"] as? Bool == true }.count == 1)
            #expect(!String(decoding: listing.data, as: UTF8.self).contains("d4ht_"))
            #expect(listing.json.keys.contains("nextCursor"))

            let stranger = try await api.individualSession().token
            let otherId = other.string("tokenId")!
            #expect(try await api.send(.delete, "/api/users/tokens/\(otherId)", token: stranger).status == .notFound)
            #expect(try await api.send(.delete, "/api/users/tokens/\(otherId)", token: current).status == .noContent)
            #expect(try await api.send(.get, "/api/users/me", token: other.string("token")).status == .unauthorized)
        }
    }

    @Test func tokenListPagesWithACursor() async throws {
        try await TestServer.run { api in
            let (token, account) = try await api.individualSession()
            for _ in 0..<4 {
                _ = try await api.send(.post, "/api/users/login", json: ["email": account["email"]!, "password": Fixtures.password])
            }
            var seen: [String] = []
            var cursor: String?
            repeat {
                let path = "/api/users/tokens?limit=2" + (cursor.map { "&cursor=\($0)" } ?? "")
                let page = try await api.send(.get, path, token: token)
                #expect(page.status == .ok)
                seen += page.items.compactMap { $0["id"] as? String }
                cursor = page.json["nextCursor"] as? String
            } while cursor != nil
            #expect(seen.count == 5)
            #expect(Set(seen).count == 5)
            let bad = try await api.send(.get, "/api/users/tokens?cursor=garbage&limit=0", token: token)
            #expect(Set(bad.problemFields) == ["cursor", "limit"])
        }
    }

    @Test func passwordChangeNeedsTheCurrentOneAndEndsOtherSessions() async throws {
        try await TestServer.run { api in
            let (token, account) = try await api.individualSession()
            let other = try await api.send(.post, "/api/users/login", json: ["email": account["email"]!, "password": Fixtures.password]).string(
                "token")
            let wrong = try await api.send(
                .patch, "/api/users/me", token: token, json: ["password": "a new long password", "currentPassword": "wrong one"])
            #expect(wrong.problemFields == ["currentPassword"])
            let changed = try await api.send(
                .patch, "/api/users/me", token: token, json: ["password": "a new long password", "currentPassword": Fixtures.password])
            #expect(changed.status == .ok)
            #expect(try await api.send(.get, "/api/users/me", token: token).status == .ok)
            #expect(try await api.send(.get, "/api/users/me", token: other).status == .unauthorized)
            let relogin = try await api.send(.post, "/api/users/login", json: ["email": account["email"]!, "password": "a new long password"])
            #expect(relogin.status == .ok)
        }
    }

    @Test func profileUpdatesAreValidatedAndFiscalCodeIsFixed() async throws {
        try await TestServer.run { api in
            let (token, _) = try await api.individualSession()
            let updated = try await api.send(.patch, "/api/users/me", token: token, json: ["timeZone": "Europe/Rome", "fullName": "Ada R."])
            #expect(updated.status == .ok)
            #expect(updated.string("timeZone") == "Europe/Rome")
            #expect(updated.string("fullName") == "Ada R.")
            let refused = try await api.send(.patch, "/api/users/me", token: token, json: ["fiscalCode": "X1234567", "timeZone": "Mars/Base"])
            #expect(Set(refused.problemFields) == ["fiscalCode", "timeZone"])
            let nulled = try await api.send(.patch, "/api/users/me", token: token, raw: #"{"fullName": null}"#)
            #expect(nulled.problemFields == ["fullName"])
            let (_, other) = try await api.individualSession()
            // A new email needs the current password, like a new password.
            #expect(
                try await api.send(.patch, "/api/users/me", token: token, json: ["email": "new-\(UUID().uuidString)@example.org"]).problemFields == [
                    "currentPassword"
                ])
            let taken = try await api.send(
                .patch, "/api/users/me", token: token, json: ["email": other["email"]!, "currentPassword": Fixtures.password])
            #expect(taken.status == .conflict)
        }
    }
}
