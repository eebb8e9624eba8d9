import DatabaseLink

/// Individuals' accounts: registration, profile and settings.
package struct IndividualAccounts: Sendable {
    let store: IndividualStore
    let hasher: PasswordHasher

    package init(database: Database, hasher: PasswordHasher) {
        self.store = IndividualStore(database: database)
        self.hasher = hasher
    }

    /// Creates the account; `AccountError.alreadyRegistered` when the email or fiscal code is taken.
    package func register(_ registration: IndividualRegistration) async throws -> IndividualRecord {
        let passwordHash = try await hasher.hash(registration.password)
        do {
            return try await store.insert(NewIndividual(
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
    package func profile(of principal: Principal) async throws -> IndividualRecord {
        guard case .individual(let id) = principal.account, let record = try await store.find(id: id) else {
            throw AccountError.notFound
        }
        return record
    }

    /// Applies a profile change. A new password needs the current one, and ends every other
    /// login token of the account (the one in use stays valid).
    package func update(_ principal: Principal, with change: IndividualProfileChange) async throws -> IndividualRecord {
        guard case .individual(let id) = principal.account else { throw AccountError.notFound }
        var changes = IndividualChanges()
        changes.email = change.email?.value
        changes.fullName = change.fullName?.value
        changes.birthDate = change.birthDate?.value
        changes.sex = change.sex?.rawValue
        changes.homeArea = change.homeArea?.value
        changes.timeZone = change.timeZone?.value
        if let newPassword = change.newPassword {
            guard let stored = try await store.passwordHash(id: id) else { throw AccountError.notFound }
            guard await hasher.verify(change.currentPassword ?? "", against: stored) else {
                throw AccountError.wrongCurrentPassword
            }
            changes.passwordHash = try await hasher.hash(newPassword)
        }
        let kept: Int64? = if case .accessToken(let tokenId) = principal.credential { tokenId } else { nil }
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
    package func erase(_ principal: Principal, password: String) async throws {
        guard case .individual(let id) = principal.account, let stored = try await store.passwordHash(id: id) else {
            throw AccountError.notFound
        }
        guard await hasher.verify(password, against: stored) else { throw AccountError.wrongPassword }
        guard try await store.delete(id: id) else { throw AccountError.notFound }
    }
}
