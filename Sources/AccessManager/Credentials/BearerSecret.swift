import Crypto
import Foundation

/// The random secrets this server hands out, and the digests it stores instead of them.
///
/// Secrets carry a recognisable prefix (`d4ht_` login token, `d4hk_` API key, `d4hw_` webhook signing secret, `d4hc_`
/// registration confirmation, `d4hs_` share link) so that a leaked
/// one is easy to spot in code or logs, and so a bearer credential can be routed to the right
/// table without a second lookup. 32 bytes from the system CSPRNG give 256 bits of entropy,
/// which makes a fast hash (SHA-256) the right digest: there is nothing to brute-force.
package enum BearerSecret {
    package static let accessTokenPrefix = "d4ht_"
    package static let apiKeyPrefix = "d4hk_"
    package static let webhookSecretPrefix = "d4hw_"
    package static let confirmationPrefix = "d4hc_"
    package static let shareLinkPrefix = "d4hs_"

    /// A new login token: `d4ht_` and 43 base64url characters.
    package static func newAccessToken() -> String {
        accessTokenPrefix + base64URL(randomBytes(32))
    }

    /// A new API key: `d4hk_<8-character id>_<43 base64url characters>`, and its visible prefix.
    package static func newAPIKey() -> (key: String, visiblePrefix: String) {
        let alphabet = Array("abcdefghijkmnpqrstuvwxyz23456789")
        var generator = SystemRandomNumberGenerator()
        let identifier = String((0..<8).map { _ in alphabet.randomElement(using: &generator)! })
        let visiblePrefix = apiKeyPrefix + identifier
        return (visiblePrefix + "_" + base64URL(randomBytes(32)), visiblePrefix)
    }

    /// A new webhook signing secret: `d4hw_` and 43 base64url characters. Unlike the other two it
    /// is kept as is (the server signs with it), and it proves nothing to this server.
    package static func newWebhookSecret() -> String {
        webhookSecretPrefix + base64URL(randomBytes(32))
    }

    /// A new registration confirmation token, mailed to the address it confirms: `d4hc_` and 43
    /// base64url characters.
    package static func newConfirmationToken() -> String {
        confirmationPrefix + base64URL(randomBytes(32))
    }

    /// A new share-link token (the last segment of `/s/{token}`): `d4hs_` and 43 base64url characters.
    package static func newShareLinkToken() -> String {
        shareLinkPrefix + base64URL(randomBytes(32))
    }

    /// The SHA-256 digest stored and looked up in place of the secret.
    package static func digest(_ secret: String) -> [UInt8] {
        Array(SHA256.hash(data: Data(secret.utf8)))
    }

    private static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in .random(in: .min ... .max, using: &generator) }
    }

    private static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
