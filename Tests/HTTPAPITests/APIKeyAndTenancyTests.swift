import Foundation
import HTTPAPI
import HTTPTypes
import Testing

@Suite("Third-party API keys, tenancy and the two surfaces")
struct APIKeyAndTenancyTests {
    @Test func keyIsShownOnceWorksAsBearerAndCanBeRevoked() async throws {
        try await TestServer.run { api in
            let (token, account) = try await api.thirdPartySession()
            let created = try await api.send(.post, "/api/thirdparties/keys", token: token, json: ["name": "production"])
            #expect(created.status == .created)
            let key = try #require(created.string("key"))
            let prefix = try #require(created.string("prefix"))
            #expect(key.hasPrefix(prefix + "_"))

            let me = try await api.send(.get, "/api/thirdparties/me", token: key)
            #expect(me.status == .ok)
            #expect(me.string("email") == account["email"] as? String)

            let listing = try await api.send(.get, "/api/thirdparties/keys", token: token)
            #expect(listing.items.count == 1)
            #expect(listing.items.first?["prefix"] as? String == prefix)
            #expect(listing.items.first?["lastUsedAt"] as? String != nil)
            #expect(!String(decoding: listing.data, as: UTF8.self).contains(key))

            let id = try #require(created.string("id"))
            #expect(try await api.send(.delete, "/api/thirdparties/keys/\(id)", token: token).status == .noContent)
            #expect(try await api.send(.get, "/api/thirdparties/me", token: key).status == .unauthorized)
            let revoked = try await api.send(.get, "/api/thirdparties/keys/\(id)", token: token)
            #expect(revoked.string("status") == "revoked")
        }
    }

    @Test func anotherTenantNeverSeesOrRevokesAKey() async throws {
        try await TestServer.run { api in
            let (owner, _) = try await api.thirdPartySession()
            let (stranger, _) = try await api.thirdPartySession()
            let created = try await api.send(.post, "/api/thirdparties/keys", token: owner, json: ["name": "ci"])
            let id = try #require(created.string("id"))
            #expect(try await api.send(.get, "/api/thirdparties/keys/\(id)", token: stranger).status == .notFound)
            #expect(try await api.send(.delete, "/api/thirdparties/keys/\(id)", token: stranger).status == .notFound)
            #expect(try await api.send(.get, "/api/thirdparties/keys", token: stranger).items.isEmpty)
            #expect(try await api.send(.get, "/api/thirdparties/me", token: created.string("key")).status == .ok)
        }
    }

    @Test func keyNameIsRequired() async throws {
        try await TestServer.run { api in
            let (token, _) = try await api.thirdPartySession()
            let reply = try await api.send(.post, "/api/thirdparties/keys", token: token, json: ["name": ""])
            #expect(reply.problemFields == ["name"])
        }
    }

    @Test func credentialsOfOneSurfaceAreForbiddenOnTheOther() async throws {
        try await TestServer.run { api in
            let (individual, _) = try await api.individualSession()
            let (party, _) = try await api.thirdPartySession()
            let key = try await api.send(.post, "/api/thirdparties/keys", token: party, json: ["name": "k"]).string("key")
            #expect(try await api.send(.get, "/api/thirdparties/me", token: individual).status == .forbidden)
            #expect(try await api.send(.get, "/api/thirdparties/keys", token: individual).status == .forbidden)
            #expect(try await api.send(.get, "/api/users/me", token: party).status == .forbidden)
            #expect(try await api.send(.get, "/api/users/me", token: key).status == .forbidden)
            // And logging in on the wrong surface simply fails.
            let (_, person) = try await api.individualSession()
            let crossLogin = try await api.send(.post, "/api/thirdparties/login", json: ["email": person["email"]!, "password": Fixtures.password])
            #expect(crossLogin.status == .unauthorized)
        }
    }

    /// Keys are for the data API: a leaked key can neither mint its successor, nor move the
    /// webhook, nor manage sessions — and it does not open the portal from a cookie.
    @Test func anAPIKeyCannotManageTheAccount() async throws {
        try await TestServer.run { api in
            let (token, _) = try await api.thirdPartySession()
            let key = try #require(try await api.send(.post, "/api/thirdparties/keys", token: token, json: ["name": "k"]).string("key"))
            for (method, path, body) in [
                (HTTPRequest.Method.post, "/api/thirdparties/keys", ["name": "successor"] as [String: any Sendable]),
                (.get, "/api/thirdparties/keys", nil), (.post, "/api/thirdparties/logout", nil), (.get, "/api/thirdparties/tokens", nil),
                (.put, "/api/thirdparties/webhook", ["url": "https://example.org/hook"]), (.get, "/api/thirdparties/webhook/deliveries", nil),
            ] {
                let reply = try await api.send(method, path, token: key, json: body)
                #expect(reply.status == .forbidden && reply.string("type")?.hasSuffix("login-session-required") == true, "\(method) \(path)")
            }
            #expect(try await api.send(.get, "/api/thirdparties/keys", token: token).items.count == 1)  // no successor was made
            // The data API still takes the key.
            #expect(try await api.send(.get, "/api/thirdparties/me", token: key).status == .ok)
            #expect(try await api.send(.get, "/api/thirdparties/requests", token: key).status == .ok)
            // A key in the portal's session cookie is no session.
            let portal = try await api.send(.get, "/portal/keys", token: nil, json: nil, raw: nil, headers: [.cookie: "d4h_portal=\(key)"])
            #expect(portal.status == .seeOther && portal.headers[.location] == "/portal/login")
        }
    }
}
