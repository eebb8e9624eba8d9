import Data4HelpCore
import DatabaseLink

/// A valid third-party registration.
package struct ThirdPartyRegistration: Sendable {
    package var name: OrganisationName
    package var email: EmailAddress
    package var password: Password

    package init(name: OrganisationName, email: EmailAddress, password: Password) {
        self.name = name
        self.email = email
        self.password = password
    }
}

/// Third-party organisations' accounts. Each organisation is a tenant.
package struct ThirdPartyAccounts: Sendable {
    let store: ThirdPartyStore
    let hasher: PasswordHasher

    package init(database: Database, hasher: PasswordHasher) {
        self.store = ThirdPartyStore(database: database)
        self.hasher = hasher
    }

    /// Creates the organisation's account at once, without an e-mail confirmation: for operators
    /// (`seed --demo`). Organisations register through `RegistrationService`.
    /// `AccountError.alreadyRegistered` when the email is taken.
    package func register(_ registration: ThirdPartyRegistration) async throws -> ThirdPartyRecord {
        let passwordHash = try await hasher.hash(registration.password)
        do {
            return try await store.insert(name: registration.name.value, email: registration.email.value, passwordHash: passwordHash)
        } catch let error where DatabaseFailure(error)?.isUniqueViolation == true {
            throw AccountError.alreadyRegistered
        }
    }

    /// The caller's own organisation.
    package func profile(of party: ThirdPartyID) async throws -> ThirdPartyRecord {
        guard let record = try await store.find(id: party.rowId) else {
            throw AccountError.notFound
        }
        return record
    }
}
