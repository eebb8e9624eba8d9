import Data4HelpCore
import DatabaseLink
import Foundation

/// Registration confirmed by e-mail, for both kinds of account.
///
/// The answer to a registration is the same whatever is already registered (`RegistrationReceipt`),
/// so it never tells a stranger whether an address or a fiscal code has an account (issue 19,
/// finding 6). What differs goes to the mailbox of the address given: a confirmation link when
/// the registration can go ahead; a notice when the address already has an account; when the
/// fiscal code belongs to another account, a notice to the registrant that support will sort it
/// out and one to the holder that someone tried. Each path hashes the password and writes once,
/// so their timings do not tell them apart either.
package struct RegistrationService: Sendable {
    /// Where links in the messages point, and how long a registration waits.
    package struct Settings: Sendable {
        /// `PUBLIC_BASE_URL`: the address people reach this server at, without a trailing slash.
        package var publicBaseURL = "http://localhost:8080"
        /// How long a confirmation link works.
        package var lifetime: Duration = .seconds(24 * 3600)
        /// Messages one address may be sent in an hour (more registrations for it send nothing).
        package var recipientCap = 5

        package init() {}
    }

    let store: RegistrationStore
    let hasher: PasswordHasher
    let settings: Settings
    /// Told when a message is queued, so this instance's `MailDispatcher` sends it at once.
    let mailQueued: ChangeSignal

    package init(database: Database, hasher: PasswordHasher, settings: Settings, mailQueued: ChangeSignal) {
        self.store = RegistrationStore(database: database)
        self.hasher = hasher
        self.settings = settings
        self.mailQueued = mailQueued
    }

    /// Records an individual's registration and queues the message it calls for.
    package func register(_ registration: IndividualRegistration) async throws -> RegistrationReceipt {
        let individual = NewIndividual(
            email: registration.email.value,
            passwordHash: try await hasher.hash(registration.password),
            fiscalCode: registration.fiscalCode.value,
            fullName: registration.fullName.value,
            birthDate: registration.birthDate.value,
            sex: registration.sex.rawValue,
            homeArea: registration.homeArea.value
        )
        let holders = try await store.individualHolders(email: individual.email, fiscalCode: individual.fiscalCode)
        let signIn = settings.publicBaseURL + "/me/login"
        if holders.emailRegistered {
            return try await record(nil, [RegistrationMail.alreadyRegistered(individual.email, signIn: signIn)])
        }
        if let holder = holders.fiscalCodeHolderEmail {
            return try await record(
                nil,
                [
                    RegistrationMail.fiscalCodeHeld(individual.email), RegistrationMail.fiscalCodeAttempt(holder, signIn: signIn),
                ])
        }
        return try await record(.individual(individual), confirmPath: "/me/confirm")
    }

    /// Records an organisation's registration and queues the message it calls for.
    package func register(_ registration: ThirdPartyRegistration) async throws -> RegistrationReceipt {
        let (name, email) = (registration.name.value, registration.email.value)
        let passwordHash = try await hasher.hash(registration.password)
        if try await store.thirdPartyHolders(email: email).emailRegistered {
            return try await record(nil, [RegistrationMail.alreadyRegistered(email, signIn: settings.publicBaseURL + "/portal/login")])
        }
        return try await record(.thirdParty(name: name, email: email, passwordHash: passwordHash), confirmPath: "/portal/confirm")
    }

    private func record(_ pending: PendingAccount, confirmPath: String) async throws -> RegistrationReceipt {
        let token = BearerSecret.newConfirmationToken()
        let hours = Int(settings.lifetime.components.seconds / 3600)
        let link = settings.publicBaseURL + confirmPath + "?token=" + token
        return try await record(pending, [RegistrationMail.confirm(pending.email, link: link, validFor: hours)], token: token)
    }

    private func record(_ pending: PendingAccount?, _ messages: [OutboundMessage], token: String? = nil) async throws -> RegistrationReceipt {
        let expiresAt = Date().addingTimeInterval(Double(settings.lifetime.components.seconds))
        // A token is drawn on every path, so that none is cheaper than the others.
        let digest = BearerSecret.digest(token ?? BearerSecret.newConfirmationToken())
        try await store.record(pending, tokenDigest: digest, expiresAt: expiresAt, messages: messages, recipientCap: settings.recipientCap)
        mailQueued.notify()
        return RegistrationReceipt(email: pending?.email ?? messages[0].recipient, expiresAt: expiresAt)
    }

    /// The registration a token confirms, as an account; `AccountError.confirmationUnknown` when
    /// the token is unknown, used or expired.
    package func confirmIndividual(token: String) async throws -> IndividualRecord {
        try await confirming { try await store.confirmIndividual(tokenDigest: BearerSecret.digest(token)) }
    }

    package func confirmThirdParty(token: String) async throws -> ThirdPartyRecord {
        try await confirming { try await store.confirmThirdParty(tokenDigest: BearerSecret.digest(token)) }
    }

    private func confirming<Record>(_ body: () async throws -> Record?) async throws -> Record {
        do {
            guard let record = try await body() else { throw AccountError.confirmationUnknown }
            return record
        } catch let error where DatabaseFailure(error)?.isUniqueViolation == true {
            // Taken between the registration and its confirmation (another confirmation won).
            throw AccountError.alreadyRegistered
        }
    }
}

/// The answer to every registration: the same whatever is already registered.
package struct RegistrationReceipt: Sendable, Equatable {
    /// The address the message went to.
    package var email: String
    /// Until when a confirmation link sent now works.
    package var expiresAt: Date
}
