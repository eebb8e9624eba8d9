import Data4HelpCore
import DatabaseLink
import Foundation

/// Turns a bearer credential into a `Principal`: one indexed lookup of its SHA-256 — or none,
/// when `cache` holds it — never a password verification per request.
package struct Authenticator: Sendable {
    /// A credential's last use is written at most this often (from half of it to all of it,
    /// spread over credentials: `CredentialSpread.period`), so a busy client does not turn every
    /// read into a write, and clients that started together do not write together.
    static let lastUseResolution = Duration.seconds(60)

    let tokens: AccessTokenStore
    let apiKeys: APIKeyStore
    let cache: CredentialCache?
    /// Where a used credential's last use goes once it has one (written in the background); nil:
    /// written in the request.
    let uses: CredentialUseWriter?

    package init(tokens: AccessTokenStore, apiKeys: APIKeyStore, cache: CredentialCache? = nil, uses: CredentialUseWriter? = nil) {
        self.tokens = tokens
        self.apiKeys = apiKeys
        self.cache = cache
        self.uses = uses
    }

    /// The principal behind a bearer credential presented on the given surface.
    package func authenticate(bearer: String, on surface: Surface) async throws -> Principal {
        let isKey = bearer.hasPrefix(BearerSecret.apiKeyPrefix)
        guard isKey || bearer.hasPrefix(BearerSecret.accessTokenPrefix) else { throw AuthenticationError.invalidToken }
        let digest = BearerSecret.digest(bearer)
        let principal: Principal
        if let cached = cache?.entry(digest) {
            principal = cached.principal
            if Self.isStale(cached.lastUseWritten, digest: digest) {
                try await record(principal.credential, firstEver: false)
                cache?.wroteUse(digest, at: Date())
            }
        } else {
            let lastUsedAt: Date?, expiresAt: Date?
            if isKey {
                guard let key = try await apiKeys.resolve(keyHash: digest) else { throw AuthenticationError.invalidToken }
                principal = Principal(account: .thirdParty(key.thirdPartyId), credential: .apiKey(id: key.id))
                (lastUsedAt, expiresAt) = (key.lastUsedAt, nil)
            } else {
                guard let token = try await tokens.resolve(tokenHash: digest) else { throw AuthenticationError.invalidToken }
                principal = Principal(account: token.owner, credential: .accessToken(id: token.id))
                (lastUsedAt, expiresAt) = (token.lastUsedAt, token.expiresAt)
            }
            var written = lastUsedAt
            if Self.isStale(lastUsedAt, digest: digest) {
                try await record(principal.credential, firstEver: lastUsedAt == nil)
                written = Date()
            }
            cache?.store(digest, principal: principal, expiresAt: expiresAt, lastUseWritten: written)
        }
        guard surface.owns(principal.account) else { throw AuthenticationError.wrongSurface }
        return principal
    }

    /// Records a use: in the background (`uses`) once the credential has a last use; its first use
    /// ever in the request, so that the owner's listing right after it shows it used.
    private func record(_ credential: Principal.Credential, firstEver: Bool) async throws {
        guard !firstEver, let uses else { return try await touch(credential) }
        switch credential {
        case .accessToken(let id): uses.noteToken(id: id)
        case .apiKey(let id): uses.noteKey(id: id)
        case .visitor: break
        }
    }

    private func touch(_ credential: Principal.Credential) async throws {
        switch credential {
        case .accessToken(let id): try await tokens.touch(id: id)
        case .apiKey(let id): try await apiKeys.touch(id: id)
        case .visitor: break
        }
    }

    private static func isStale(_ lastUse: Date?, digest: [UInt8]) -> Bool {
        guard let lastUse else { return true }
        return Date().timeIntervalSince(lastUse) >= CredentialSpread.period(lastUseResolution, of: digest) / .seconds(1)
    }
}
