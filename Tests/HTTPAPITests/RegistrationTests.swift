import AccessManager
import Foundation
import HTTPAPI
import HTTPTypes
import Testing

@Suite("Registration of individuals and third parties")
struct RegistrationTests {
    @Test func individualRegistersConfirmsByMailAndGetsNormalisedProfile() async throws {
        try await TestServer.run { api in
            let body = Fixtures.individual([
                "email": " Ada.Rossi-\(Fixtures.unique())@Example.ORG ", "fiscalCode": "rssmra85t10a562s", "homeArea": "it-mi",
            ])
            let email = (body["email"] as! String).trimmingCharacters(in: .whitespaces).lowercased()
            let registered = try await api.send(.post, "/api/users/registration", json: body)
            #expect(registered.status == .accepted)
            #expect(registered.string("status") == "confirmationSent")
            #expect(registered.string("email") == email)
            // Nothing exists until the link comes back.
            let early = try await api.send(.post, "/api/users/login", json: ["email": email, "password": Fixtures.password])
            #expect(early.status == .unauthorized)

            let token = try await Mailbox.confirmationToken(for: email)
            let reply = try await api.send(.post, "/api/users/registration/confirmation", json: ["token": token])
            #expect(reply.status == .created)
            #expect(reply.headers[.location] == "/api/users/me")
            #expect(reply.string("email") == email)
            #expect(reply.string("fiscalCode") == "RSSMRA85T10A562S")
            #expect(reply.string("homeArea") == "IT-MI")
            #expect(reply.string("timeZone") == "UTC")
            #expect(UUID(uuidString: reply.string("id") ?? "") != nil)
            #expect(reply.json["password"] == nil)
            #expect(try await api.send(.post, "/api/users/login", json: ["email": email, "password": Fixtures.password]).status == .ok)

            // A link works once.
            let again = try await api.send(.post, "/api/users/registration/confirmation", json: ["token": token])
            #expect(again.status == .unprocessableContent)
            #expect(again.problemFields == ["token"])
        }
    }

    /// Finding 6 of issue 19: the answer to a registration is the same whether the address or the
    /// fiscal code is free or taken, so a stranger learns nothing; what differs goes to mailboxes.
    @Test func registrationAnswersAlikeWhateverIsRegisteredAndTellsOnlyTheMailboxes() async throws {
        try await TestServer.run { api in
            let (_, holder) = try await api.individualSession()
            let holderEmail = holder["email"] as! String
            let fresh = Fixtures.individual()
            let sameEmail = Fixtures.individual(["email": holderEmail])
            let sameCode = Fixtures.individual(["fiscalCode": holder["fiscalCode"]!])
            var answers: [APIClient.Reply] = []
            for body in [fresh, sameEmail, sameCode] {
                answers.append(try await api.send(.post, "/api/users/registration", json: body))
            }
            for (reply, body) in zip(answers, [fresh, sameEmail, sameCode]) {
                #expect(reply.status == .accepted)
                #expect(Set(reply.json.keys) == ["status", "email", "expiresAt"])
                #expect(reply.string("status") == "confirmationSent")
                #expect(reply.string("email") == body["email"] as? String)
                let text = String(decoding: reply.data, as: UTF8.self)
                #expect(!text.contains(holder["fiscalCode"] as! String))
            }
            // The mailboxes: a link for the fresh address; a notice (no link) for the taken one;
            // for the taken fiscal code, a notice to the registrant and one to the holder.
            #expect(try await Mailbox.confirmationToken(for: fresh["email"] as! String).hasPrefix("d4hc_"))
            let holderMail = try await Mailbox.waitForMessages(to: holderEmail, count: 3)
            #expect(
                holderMail.map(\.subject) == [
                    "Confirm your Data4Help account", "Your Data4Help account", "Someone tried to register with your fiscal code",
                ])
            #expect(!holderMail[1].text.contains("token=") && !holderMail[2].text.contains("token="))
            let registrantMail = try await Mailbox.waitForMessages(to: sameCode["email"] as! String)
            #expect(registrantMail.map(\.subject) == ["Your Data4Help registration"])
            #expect(!registrantMail[0].text.contains("token="))
            #expect(!holderMail[2].text.contains(sameCode["email"] as! String))
            // Nothing was created for the two refused registrations.
            let login = try await api.send(.post, "/api/users/login", json: ["email": sameCode["email"]!, "password": Fixtures.password])
            #expect(login.status == .unauthorized)
        }
    }

    @Test func aLinkForAFiscalCodeTakenMeanwhileIsAConflictAndAForgedOneIsRefused() async throws {
        try await TestServer.run { api in
            let first = Fixtures.individual()
            let second = Fixtures.individual(["fiscalCode": first["fiscalCode"]!])
            for body in [first, second] {
                #expect(try await api.send(.post, "/api/users/registration", json: body).status == .accepted)
            }
            let firstToken = try await Mailbox.confirmationToken(for: first["email"] as! String)
            let secondToken = try await Mailbox.confirmationToken(for: second["email"] as! String)
            #expect(try await api.send(.post, "/api/users/registration/confirmation", json: ["token": secondToken]).status == .created)
            let late = try await api.send(.post, "/api/users/registration/confirmation", json: ["token": firstToken])
            #expect(late.status == .conflict)
            #expect(late.string("type") == "tag:data4help,2026:problem:already-registered")
            for forged in ["d4hc_" + String(repeating: "A", count: 43), "anything", String(repeating: "x", count: 129)] {
                let reply = try await api.send(.post, "/api/users/registration/confirmation", json: ["token": forged])
                #expect(reply.status == .unprocessableContent)
                #expect(reply.problemFields == ["token"])
            }
            // An individual's token confirms nothing on the organisations' surface.
            let party = Fixtures.thirdParty()
            #expect(try await api.send(.post, "/api/thirdparties/registration", json: party).status == .accepted)
            let partyToken = try await Mailbox.confirmationToken(for: party["email"] as! String)
            #expect(try await api.send(.post, "/api/users/registration/confirmation", json: ["token": partyToken]).status == .unprocessableContent)
        }
    }

    @Test func anAddressIsSentAtMostFiveMessagesAnHour() async throws {
        try await TestServer.run { api in
            let body = Fixtures.individual()
            for _ in 0..<7 {
                #expect(try await api.send(.post, "/api/users/registration", json: body).status == .accepted)
            }
            _ = try await Mailbox.waitForMessages(to: body["email"] as! String, count: 5)
            try await Task.sleep(for: .milliseconds(500))
            #expect(Mailbox.messages(to: body["email"] as! String).count == 5)
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

    @Test func thirdPartyRegistersByMailOnceAndIsValidated() async throws {
        try await TestServer.run { api in
            let body = Fixtures.thirdParty()
            let created = try await api.registerAndConfirm(surface: "thirdparties", body)
            #expect(created.string("name") == body["name"] as? String)
            #expect(created.headers[.location] == "/api/thirdparties/me")
            let again = try await api.send(.post, "/api/thirdparties/registration", json: Fixtures.thirdParty(["email": body["email"]!]))
            #expect(again.status == .accepted)
            let mail = try await Mailbox.waitForMessages(to: body["email"] as! String, count: 2)
            #expect(mail.map(\.subject) == ["Confirm your Data4Help account", "Your Data4Help account"])
            let invalid = try await api.send(.post, "/api/thirdparties/registration", json: ["name": "A", "email": "nope", "password": "short"])
            #expect(Set(invalid.problemFields) == ["name", "email", "password"])
        }
    }
}
