import Foundation
import HTTPAPI
import HTTPTypes
import Testing

@Suite("Registration of individuals and third parties")
struct RegistrationTests {
    @Test func individualRegistersAndGetsNormalisedProfile() async throws {
        try await TestServer.run { api in
            let body = Fixtures.individual(["email": " Ada.Rossi@Example.ORG ", "fiscalCode": "rssmra85t10a562s", "homeArea": "it-mi"])
            let reply = try await api.send(.post, "/api/users/registration", json: body)
            #expect(reply.status == .created)
            #expect(reply.headers[.location] == "/api/users/me")
            #expect(reply.string("email") == "ada.rossi@example.org")
            #expect(reply.string("fiscalCode") == "RSSMRA85T10A562S")
            #expect(reply.string("homeArea") == "IT-MI")
            #expect(reply.string("timeZone") == "UTC")
            #expect(UUID(uuidString: reply.string("id") ?? "") != nil)
            #expect(reply.json["password"] == nil)
        }
    }

    @Test func duplicateEmailOrFiscalCodeIsAConflictThatNamesNoAccount() async throws {
        try await TestServer.run { api in
            let first = Fixtures.individual()
            #expect(try await api.send(.post, "/api/users/registration", json: first).status == .created)
            let sameEmail = Fixtures.individual(["email": first["email"]!])
            let sameCode = Fixtures.individual(["fiscalCode": first["fiscalCode"]!])
            let byEmail = try await api.send(.post, "/api/users/registration", json: sameEmail)
            let byCode = try await api.send(.post, "/api/users/registration", json: sameCode)
            for reply in [byEmail, byCode] {
                #expect(reply.status == .conflict)
                #expect(reply.headers[.contentType] == "application/problem+json")
                let text = String(decoding: reply.data, as: UTF8.self)
                #expect(!text.contains(first["email"] as! String))
                #expect(!text.contains(first["fiscalCode"] as! String))
            }
            // Both answers are the same, so they do not tell which field is taken.
            #expect(byEmail.string("detail") == byCode.string("detail"))
        }
    }

    @Test(arguments: [
        ("email", "not-an-email"),
        ("password", "short"),
        ("fiscalCode", "RSSMRA85T10A562T"),
        ("fullName", "   "),
        ("birthDate", "1985-13-01"),
        ("birthDate", "2999-01-01"),
        ("sex", "robot"),
        ("homeArea", "Via Roma 1"),
    ])
    func eachInvalidFieldIsNamed(field: String, value: String) async throws {
        try await TestServer.run { api in
            let reply = try await api.send(.post, "/api/users/registration", json: Fixtures.individual([field: value]))
            #expect(reply.status == .unprocessableContent)
            #expect(reply.problemFields == [field])
            #expect(reply.string("type") == "tag:data4help,2026:problem:validation-error")
            #expect(reply.json["status"] as? Int == 422)
        }
    }

    @Test func everyMissingFieldIsListedAndNothingIsStored() async throws {
        try await TestServer.run { api in
            let reply = try await api.send(.post, "/api/users/registration", json: ["email": "x@example.org", "sex": 3])
            #expect(reply.status == .unprocessableContent)
            #expect(reply.problemFields == ["sex"])  // a wrong JSON type is reported first
            let missing = try await api.send(.post, "/api/users/registration", json: ["email": "x@example.org"])
            #expect(Set(missing.problemFields) == ["password", "fiscalCode", "fullName", "birthDate", "sex", "homeArea"])
            let login = try await api.send(.post, "/api/users/login", json: ["email": "x@example.org", "password": Fixtures.password])
            #expect(login.status == .unauthorized)
        }
    }

    @Test func thirdPartyRegistersOnceAndIsValidated() async throws {
        try await TestServer.run { api in
            let body = Fixtures.thirdParty()
            let created = try await api.send(.post, "/api/thirdparties/registration", json: body)
            #expect(created.status == .created)
            #expect(created.string("name") == body["name"] as? String)
            let again = try await api.send(.post, "/api/thirdparties/registration", json: Fixtures.thirdParty(["email": body["email"]!]))
            #expect(again.status == .conflict)
            let invalid = try await api.send(.post, "/api/thirdparties/registration", json: ["name": "A", "email": "nope", "password": "short"])
            #expect(Set(invalid.problemFields) == ["name", "email", "password"])
        }
    }
}
