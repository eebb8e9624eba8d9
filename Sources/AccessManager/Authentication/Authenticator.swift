import Data4HelpCore
import DatabaseLink
import Foundation

/// Turns a bearer credential into a `Principal`: one indexed lookup of its SHA-256, never a
/// password verification per request.
package struct Authenticator: Sendable {
    /// A credential's last use is written at most this often, so a busy client does not
    /// turn every read into a write.
    static let lastUseResolution: TimeInterval = 60

    let tokens: AccessTokenStore
    let apiKeys: APIKeyStore

    package init(tokens: AccessTokenStore, apiKeys: APIKeyStore) {
        self.tokens = tokens
        self.apiKeys = apiKeys
    }

    /// The principal behind a bearer credential presented on the given surface.
    package func authenticate(bearer: String, on surface: Surface) async throws -> Principal {
        let principal: Principal
        if bearer.hasPrefix(BearerSecret.apiKeyPrefix) {
            guard let key = try await apiKeys.resolve(keyHash: BearerSecret.digest(bearer)) else {
                throw AuthenticationError.invalidToken
            }
            if Self.isStale(key.lastUsedAt) { try await apiKeys.touch(id: key.id) }
            principal = Principal(account: .thirdParty(key.thirdPartyId), credential: .apiKey(id: key.id))
        } else if bearer.hasPrefix(BearerSecret.accessTokenPrefix) {
            guard let token = try await tokens.resolve(tokenHash: BearerSecret.digest(bearer)) else {
                throw AuthenticationError.invalidToken
            }
            if Self.isStale(token.lastUsedAt) { try await tokens.touch(id: token.id) }
            principal = Principal(account: token.owner, credential: .accessToken(id: token.id))
        } else {
            throw AuthenticationError.invalidToken
        }
        guard surface.owns(principal.account) else { throw AuthenticationError.wrongSurface }
        return principal
    }

    private static func isStale(_ lastUse: Date?) -> Bool {
        guard let lastUse else { return true }
        return Date().timeIntervalSince(lastUse) >= lastUseResolution
    }
}
