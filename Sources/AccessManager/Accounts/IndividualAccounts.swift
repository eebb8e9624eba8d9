import Data4HelpCore
import DatabaseLink

/// Individuals' accounts: registration, profile and settings.
package struct IndividualAccounts: Sendable {
    let store: IndividualStore
    let hasher: PasswordHasher
    /// Password checks on a signed-in account (changing the email or password, erasing) count
    /// against the same per-account limit as sign-in: a stolen token cannot guess the password.
    let throttle: LoginThrottle

    package init(database: Database, hasher: PasswordHasher, throttle: LoginThrottle.Limits = .init()) {
        self.store = IndividualStore(database: database)
        self.hasher = hasher
        self.throttle = LoginThrottle(database: database, limits: throttle)
    }

    /// Creates the account at once, without an e-mail confirmation: for operators (`seed --demo`).
    /// People register through `RegistrationService`. `AccountError.alreadyRegistered` when the
    /// email or fiscal code is taken.
    package func register(_ registration: IndividualRegistration) async throws -> IndividualRecord {
        let passwordHash = try await hasher.hash(registration.password)
        do {
            return try await store.insert(
                NewIndividual(
                    email: registration.email.value,
                    passwordHash: passwordHash,
                    fiscalCode: registration.fiscalCode.value,
                    fullName: registration.fullName.value,
                    birthDate: registration.birthDate.value,
                    sex: registration.sex.rawValue,
                    homeArea: registration.homeArea.value
                ))
        } catch let error where DatabaseFailure(error)?.isUniqueViolation == true {
            throw AccountError.alreadyRegistered
        }
    }

    /// The caller's own account.
    package func profile(of individual: IndividualID) async throws -> IndividualRecord {
        guard let record = try await store.find(id: individual.rowId) else {
            throw AccountError.notFound
        }
        return record
    }

    /// Applies a profile change. A new email or password needs the current password (checked
    /// under the sign-in throttle); a new password ends every other login token of the account
    /// (the one in use, `credential`, stays valid).
    package func update(
        _ individual: IndividualID, signedInWith credential: Principal.Credential, with change: IndividualProfileChange
    ) async throws -> IndividualRecord {
        let id = individual.rowId
        if change.email != nil || change.newPassword != nil {
            guard try await verifyPassword(change.currentPassword ?? "", of: id) else { throw AccountError.wrongCurrentPassword }
        }
        var changes = IndividualChanges()
        changes.email = change.email?.value
        changes.fullName = change.fullName?.value
        changes.birthDate = change.birthDate?.value
        changes.sex = change.sex?.rawValue
        changes.homeArea = change.homeArea?.value
        changes.timeZone = change.timeZone?.value
        changes.aggregatesOptOut = change.aggregatesOptOut
        changes.maximumHeartRate = change.maximumHeartRate
        if let newPassword = change.newPassword {
            changes.passwordHash = try await hasher.hash(newPassword)
        }
        let kept: Int64? = if case .accessToken(let tokenId) = credential { tokenId } else { nil }
        let updated: IndividualRecord?
        do {
            updated = try await store.update(id: id, changes, keptTokenId: kept)
        } catch let error where DatabaseFailure(error)?.isUniqueViolation == true {
            throw AccountError.emailInUse
        }
        guard let updated else { throw AccountError.notFound }
        return updated
    }

    /// Erases the account and all its data for good (GDPR art. 17), after checking the password:
    /// a stolen token alone must not be enough to destroy someone's history.
    package func erase(_ individual: IndividualID, password: String) async throws {
        let id = individual.rowId
        guard try await verifyPassword(password, of: id) else { throw AccountError.wrongPassword }
        guard try await store.delete(id: id) else { throw AccountError.notFound }
    }

    /// Checks the account's password, refusing (429) while the account's sign-in limit is
    /// reached; a wrong password counts as a failed sign-in, a right one clears the count.
    private func verifyPassword(_ password: String, of id: Int64) async throws -> Bool {
        guard let record = try await store.find(id: id), let stored = try await store.passwordHash(id: id) else {
            throw AccountError.notFound
        }
        let attempt = LoginThrottle.Attempt(surface: .individual, email: EmailAddress.normalisedForLookup(record.email), address: nil)
        try await throttle.check(attempt)
        guard await hasher.verify(password, against: stored) else {
            try await throttle.failed(attempt)
            return false
        }
        try await throttle.succeeded(attempt)
        return true
    }
}
