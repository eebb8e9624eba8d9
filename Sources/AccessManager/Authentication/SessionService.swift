import Data4HelpCore
import DatabaseLink
import Foundation

/// A login token just issued: the only time its secret exists outside the client.
package struct IssuedToken: Sendable {
    package let token: String
    package let record: AccessTokenRecord
}

/// Logging in and out, and an account's list of live login tokens.
package struct SessionService: Sendable {
    let individuals: IndividualStore
    let thirdParties: ThirdPartyStore
    let tokens: AccessTokenStore
    let hasher: PasswordHasher
    let throttle: LoginThrottle
    /// How long a login token lives.
    package let tokenLifetime: Duration

    package init(database: Database, hasher: PasswordHasher, tokenLifetime: Duration, throttle: LoginThrottle.Limits = .init()) {
        self.throttle = LoginThrottle(database: database, limits: throttle)
        self.individuals = IndividualStore(database: database)
        self.thirdParties = ThirdPartyStore(database: database)
        self.tokens = AccessTokenStore(database: database)
        self.hasher = hasher
        self.tokenLifetime = tokenLifetime
    }

    /// Checks email and password and issues a token. Unknown email and wrong password fail
    /// alike, in about the same time, and count against the account and the client's address
    /// (`LoginThrottle`); while either is over its limit, sign-in is refused before any check.
    package func login(on surface: Surface, email: String, password: String, from client: String?) async throws -> IssuedToken {
        let address = EmailAddress.normalisedForLookup(email)
        let attempt = LoginThrottle.Attempt(surface: surface, email: address, address: client)
        try await throttle.check(attempt)
        do {
            let issued = try await verifiedLogin(on: surface, address: address, password: password)
            try await throttle.succeeded(attempt)
            return issued
        } catch AuthenticationError.invalidLogin {
            try await throttle.failed(attempt)
            throw AuthenticationError.invalidLogin
        }
    }

    private func verifiedLogin(on surface: Surface, address: String, password: String) async throws -> IssuedToken {
        let credentials: (id: Int64, passwordHash: String)?
        if address.contains("\0") {
            credentials = nil  // PostgreSQL text cannot hold NUL, and no stored address does
        } else {
            switch surface {
            case .individual: credentials = try await individuals.credentials(email: address)
            case .thirdParty: credentials = try await thirdParties.credentials(email: address)
            }
        }
        guard let credentials else {
            _ = await hasher.verifyDecoy(password)
            throw AuthenticationError.invalidLogin
        }
        guard await hasher.verify(password, against: credentials.passwordHash) else {
            throw AuthenticationError.invalidLogin
        }
        let owner: AccountReference = surface == .individual ? .individual(credentials.id) : .thirdParty(credentials.id)
        return try await issue(for: owner)
    }

    /// A fresh token for an account whose identity is already established.
    package func issue(for owner: AccountReference) async throws -> IssuedToken {
        let token = BearerSecret.newAccessToken()
        let seconds = tokenLifetime.inSeconds
        let record = try await tokens.insert(
            owner: owner, tokenHash: BearerSecret.digest(token), expiresAt: Date().addingTimeInterval(seconds)
        )
        return IssuedToken(token: token, record: record)
    }

    /// Ends the login token the request was made with.
    package func logout(_ principal: Principal) async throws {
        guard case .accessToken(let id) = principal.credential else { throw AuthenticationError.notALoginToken }
        try await tokens.revoke(id: id)
    }

    /// The account's live tokens, newest first.
    package func liveTokens(of owner: AccountReference, beforeId: Int64?, limit: Int) async throws -> [AccessTokenRecord] {
        try await tokens.list(owner: owner, beforeId: beforeId, limit: limit)
    }

    /// Revokes one of the account's tokens; false when it has no such live token.
    package func revokeToken(of owner: AccountReference, publicId: UUID) async throws -> Bool {
        try await tokens.revoke(owner: owner, publicId: publicId)
    }
}
