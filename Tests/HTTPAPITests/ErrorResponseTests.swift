import Foundation
import HTTPAPI
import HTTPTypes
import Testing

@Suite("Every error is problem+json of the right class")
struct ErrorResponseTests {
    @Test func malformedJSONIsBadRequest() async throws {
        try await TestServer.run { api in
            let reply = try await api.send(.post, "/api/users/registration", raw: #"{"email": "a@b.org","#)
            #expect(reply.status == .badRequest)
            #expect(reply.headers[.contentType] == "application/problem+json")
            #expect(reply.string("type") == "tag:data4help,2026:problem:malformed-body")
            for key in ["type", "title", "status", "detail"] { #expect(reply.json[key] != nil) }
        }
    }

    @Test func validJSONOfTheWrongShapeIsUnprocessable() async throws {
        try await TestServer.run { api in
            let reply = try await api.send(.post, "/api/users/registration", raw: "[1, 2]")
            #expect(reply.status == .unprocessableContent)
            #expect(reply.problemFields == ["body"])
        }
    }

    @Test func nonJSONContentTypeIsRefused() async throws {
        try await TestServer.run { api in
            let reply = try await api.send(
                .post, "/api/users/registration", raw: "email=a", headers: [.contentType: "application/x-www-form-urlencoded"])
            #expect(reply.status == .unsupportedMediaType)
        }
    }

    @Test func oversizedBodyIsContentTooLargeAndNotStored() async throws {
        try await TestServer.run(configure: { $0.maxBodyBytes = 1024 }) { api in
            let body = Fixtures.individual(["fullName": String(repeating: "a", count: 2000)])
            let reply = try await api.send(.post, "/api/users/registration", json: body)
            #expect(reply.status == .contentTooLarge)
            #expect(reply.headers[.contentType] == "application/problem+json")
            let login = try await api.send(.post, "/api/users/login", json: ["email": body["email"]!, "password": Fixtures.password])
            #expect(login.status == .unauthorized)
        }
    }

    @Test func missingTokenIsUnauthorizedWithChallenge() async throws {
        try await TestServer.run { api in
            let reply = try await api.send(.get, "/api/users/me")
            #expect(reply.status == .unauthorized)
            #expect(reply.headers[.wwwAuthenticate] == #"Bearer realm="data4help""#)
            let bad = try await api.send(.get, "/api/users/me", token: "d4ht_not-a-real-token")
            #expect(bad.status == .unauthorized)
            #expect(bad.headers[.wwwAuthenticate]?.contains(#"error="invalid_token""#) == true)
        }
    }

    @Test func unknownRouteIsNotFoundProblem() async throws {
        try await TestServer.run { api in
            let reply = try await api.send(.get, "/api/users/nothing-here")
            #expect(reply.status == .notFound)
            #expect(reply.headers[.contentType] == "application/problem+json")
        }
    }

    @Test func requestIdIsEchoedAndQuotedInProblems() async throws {
        try await TestServer.run { api in
            let reply = try await api.send(.get, "/api/users/me", headers: [HTTPField.Name("X-Request-Id")!: "trace-42"])
            #expect(reply.headers[HTTPField.Name("X-Request-Id")!] == "trace-42")
            #expect(reply.string("requestId") == "trace-42")
            let forged = try await api.send(.get, "/healthz", headers: [HTTPField.Name("X-Request-Id")!: "bad\nid"])
            #expect(forged.headers[HTTPField.Name("X-Request-Id")!] != nil)
            #expect(forged.headers[HTTPField.Name("X-Request-Id")!]?.contains("\n") == false)
            // Without one, each request gets a random (version 4) UUID of its own.
            var given = Set<String>()
            for _ in 0..<50 {
                let id = try #require(try await api.send(.get, "/healthz").headers[HTTPField.Name("X-Request-Id")!])
                let uuid = try #require(UUID(uuidString: id), "\(id) is a UUID")
                #expect(id == id.lowercased() && uuid.uuid.6 >> 4 == 4 && uuid.uuid.8 >> 6 == 2, "\(id): version 4, RFC 9562 variant")
                given.insert(id)
            }
            #expect(given.count == 50)
        }
    }
}

@Suite("Methods and credentials at the edges")
struct EdgeResponseTests {
    @Test func knownPathWithAnotherMethodIsMethodNotAllowed() async throws {
        try await TestServer.run { api in
            let reply = try await api.send(.put, "/api/users/me")
            #expect(reply.status == .methodNotAllowed)
            #expect(reply.headers[.allow] == "GET, DELETE, PATCH, HEAD")
            #expect(reply.headers[.contentType] == "application/problem+json")
            let withParameter = try await api.send(.post, "/api/thirdparties/keys/\(UUID().uuidString)")
            #expect(withParameter.headers[.allow] == "GET, DELETE, HEAD")
        }
    }

    @Test func headAnswersLikeGetWithoutABody() async throws {
        try await TestServer.run { api in
            let reply = try await api.send(.head, "/healthz")
            #expect(reply.status == .ok)
            #expect(reply.data.isEmpty)
        }
    }

    @Test func nulCharactersNeverReachTheDatabaseAsErrors() async throws {
        try await TestServer.run { api in
            let login = try await api.send(.post, "/api/thirdparties/login", raw: #"{"email": "a\u0000@b.org", "password": "x"}"#)
            #expect(login.status == .unauthorized)
            let registration = try await api.send(.post, "/api/users/registration", json: Fixtures.individual(["fullName": "Ada\u{0}Rossi"]))
            #expect(registration.problemFields == ["fullName"])
        }
    }

    @Test func loginWithoutAnyCredentialsIsUnauthorized() async throws {
        try await TestServer.run { api in
            let reply = try await api.send(.post, "/api/users/login")
            #expect(reply.status == .unauthorized)
            #expect(reply.headers[.wwwAuthenticate]?.hasPrefix("Basic") == true)
            let bearerInsteadOfBasic = try await api.send(.post, "/api/thirdparties/login", token: "d4ht_whatever")
            #expect(bearerInsteadOfBasic.status == .unauthorized)
        }
    }
}
