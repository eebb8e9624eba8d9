import Crypto
import DatabaseLink
import Foundation
import Logging

/// Brute-force protection for sign-in: failed attempts are counted per account and per client
/// address in PostgreSQL (so the limit holds across every instance); once either reaches its
/// limit within the window, sign-in is refused with 429 before any password is checked, until
/// the window ends. A correct password clears the account's count, not the address's.
package struct LoginThrottle: Sendable {
    package struct Limits: Sendable {
        /// `LOGIN_FAILURES_PER_ACCOUNT`
        package var perAccount: Int32 = 10
        /// `LOGIN_FAILURES_PER_ADDRESS`
        package var perAddress: Int32 = 50
        /// `LOGIN_FAILURE_WINDOW_SECONDS`
        package var window = Duration.seconds(15 * 60)
        package init() {}
    }

    let store: LoginFailureStore
    let limits: Limits

    package init(database: Database, limits: Limits) {
        self.store = LoginFailureStore(database: database)
        self.limits = limits
    }

    private var windowSeconds: Int32 { Int32(limits.window.components.seconds) }

    /// Throws `AuthenticationError.throttled` while the account or the address is closed.
    func check(_ attempt: Attempt) async throws {
        let keys = attempt.keys
        if let seconds = try await store.closedFor(
            keys: keys.map(\.digest), limits: keys.map { $0.perAccount ? limits.perAccount : limits.perAddress }, windowSeconds: windowSeconds)
        {
            throw AuthenticationError.throttled(retryAfterSeconds: seconds)
        }
    }

    func failed(_ attempt: Attempt) async throws {
        try await store.recordFailure(keys: attempt.keys.map(\.digest), windowSeconds: windowSeconds)
    }

    func succeeded(_ attempt: Attempt) async throws {
        try await store.clear(key: attempt.accountKey)
    }

    /// One sign-in attempt's keys: digests, so no email or address is stored in clear.
    struct Attempt {
        let accountKey: String
        let addressKey: String?

        init(surface: Surface, email: String, address: String?) {
            accountKey = Self.digest("account:\(surface):\(email)")
            addressKey = address.map { Self.digest("address:\($0)") }
        }

        var keys: [(digest: String, perAccount: Bool)] {
            [(accountKey, true)] + (addressKey.map { [($0, false)] } ?? [])
        }

        private static func digest(_ text: String) -> String {
            SHA256.hash(data: Data(text.utf8)).map { String(format: "%02x", $0) }.joined()
        }
    }
}
