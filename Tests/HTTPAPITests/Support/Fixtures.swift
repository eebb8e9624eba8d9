import Foundation
import HTTPTypes

/// Valid account bodies, unique per call so that tests sharing nothing never collide.
enum Fixtures {
    static let password = "correct horse battery"

    static func unique() -> String {
        UUID().uuidString.prefix(8).lowercased()
    }

    /// A valid individual registration; a generic national id keeps fiscal codes unique.
    static func individual(_ overrides: [String: any Sendable] = [:]) -> [String: any Sendable] {
        let tag = unique()
        var body: [String: any Sendable] = [
            "email": "person-\(tag)@example.org",
            "password": password,
            "fiscalCode": "ID\(tag.uppercased())9",
            "fullName": "Ada Rossi",
            "birthDate": "1950-03-14",
            "sex": "female",
            "homeArea": "IT-MI",
        ]
        body.merge(overrides) { $1 }
        return body
    }

    static func thirdParty(_ overrides: [String: any Sendable] = [:]) -> [String: any Sendable] {
        var body: [String: any Sendable] = [
            "name": "Acme Research \(unique())",
            "email": "ops-\(unique())@acme.test",
            "password": password,
        ]
        body.merge(overrides) { $1 }
        return body
    }
}

extension APISending {
    /// Registers an individual as a person would — the registration, the link from the mailbox,
    /// the confirmation — and logs in; returns the login token and the registration body.
    func individualSession(_ overrides: [String: any Sendable] = [:]) async throws -> (token: String, account: [String: any Sendable]) {
        let account = Fixtures.individual(overrides)
        try await registerAndConfirm(surface: "users", account)
        let login = try await send(.post, "/api/users/login", json: ["email": account["email"]!, "password": Fixtures.password])
        return (login.string("token") ?? "", account)
    }

    /// `POST /api/{surface}/registration`, then the confirmation with the token mailed to the
    /// account's address; returns the confirmation's reply (201 and the account).
    @discardableResult
    func registerAndConfirm(surface: String, _ account: [String: any Sendable]) async throws -> APIClient.Reply {
        let email = account["email"] as! String
        let earlier = Mailbox.messages(to: email).count  // an address registered again (after an erasure)
        let registered = try await send(.post, "/api/\(surface)/registration", json: account)
        precondition(registered.status == .accepted, "registration failed: \(registered.status)")
        let token = try await Mailbox.confirmationToken(for: email, after: earlier)
        let confirmed = try await send(.post, "/api/\(surface)/registration/confirmation", json: ["token": token])
        precondition(confirmed.status == .created, "confirmation failed: \(confirmed.status)")
        return confirmed
    }

    /// Registers a third party and logs in; returns the login token and the registration body.
    func thirdPartySession() async throws -> (token: String, account: [String: any Sendable]) {
        let account = Fixtures.thirdParty()
        try await registerAndConfirm(surface: "thirdparties", account)
        let login = try await send(.post, "/api/thirdparties/login", json: ["email": account["email"]!, "password": Fixtures.password])
        return (login.string("token") ?? "", account)
    }
}
