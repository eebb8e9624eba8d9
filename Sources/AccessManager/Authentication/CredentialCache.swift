import Data4HelpCore
import DatabaseLink
import Foundation
import Synchronization

/// Bearer credentials this instance resolved recently, by the SHA-256 of the secret, so that a
/// request costs no credential lookup (issue 26: the lookup was one of the two statements of
/// `GET /api/users/me`).
///
/// Revocation stays immediate: a credential that stops working is announced by the database on
/// `data4help_credentials` when the change commits (migration 0042) and forgotten here at once.
/// The cache is used only while that announcement can be heard: until the listener's connection
/// is up, and from the moment it is lost, every lookup goes to the database; each (re)connection
/// starts from empty, since announcements made while it was down are lost. An entry also ends
/// with its credential's own expiry and after `lifetime`, whichever is first.
package final class CredentialCache: Sendable {
    package struct Entry: Sendable {
        package let principal: Principal
        /// When the credential stops working by itself (login tokens); nil for API keys.
        package let expiresAt: Date?
        /// When its use was last written to the database (see `Authenticator.lastUseResolution`).
        package var lastUseWritten: Date?
        /// When the cache stops serving it (see `spread(_:of:)`).
        let endsAt: ContinuousClock.Instant
    }

    private struct State {
        var entries: [[UInt8]: Entry] = [:]
        var listening = false
    }

    package let lifetime: Duration
    package let capacity: Int
    private let state = Mutex(State())

    package init(lifetime: Duration = .seconds(60), capacity: Int = 100_000) {
        self.lifetime = lifetime
        self.capacity = capacity
        // What this process revokes is forgotten before the revoking request is answered.
        CredentialRevocations.subscribe(self) { [weak self] ended in self?.forget(ended) }
    }

    deinit {
        CredentialRevocations.unsubscribe(self)
    }

    /// Forgets what this process just ended (a scan: revocations are rare, lookups are not).
    package func forget(_ ended: EndedCredential) {
        state.withLock { state in
            state.entries = state.entries.filter { _, entry in
                switch ended {
                case .accessToken(let id): entry.principal.credential != .accessToken(id: id)
                case .apiKey(let id): entry.principal.credential != .apiKey(id: id)
                case .account(let account): entry.principal.account != account
                }
            }
        }
    }

    /// The live entry of this digest, if the cache is in use and has one.
    package func entry(_ digest: [UInt8], now: Date = Date()) -> Entry? {
        let clock = ContinuousClock.now
        return state.withLock { state -> Entry? in
            guard state.listening, let entry = state.entries[digest] else { return nil }
            guard clock < entry.endsAt, entry.expiresAt.map({ $0 > now }) ?? true else {
                state.entries[digest] = nil
                return nil
            }
            return entry
        }
    }

    /// Keeps a credential just resolved (nothing while the announcements cannot be heard). Full:
    /// starts again from empty — a miss costs one lookup, never a wrong answer.
    package func store(_ digest: [UInt8], principal: Principal, expiresAt: Date?, lastUseWritten: Date?) {
        let entry = Entry(
            principal: principal, expiresAt: expiresAt, lastUseWritten: lastUseWritten, endsAt: .now + CredentialSpread.period(lifetime, of: digest))
        state.withLock { state in
            guard state.listening else { return }
            if state.entries.count >= capacity { state.entries.removeAll(keepingCapacity: true) }
            state.entries[digest] = entry
        }
    }

    /// Notes that the credential's use was written now.
    package func wroteUse(_ digest: [UInt8], at date: Date) {
        state.withLock { $0.entries[digest]?.lastUseWritten = date }
    }

    /// An announcement: the credential with this digest (hex) stopped working.
    package func forget(hex: String) {
        guard let digest = Self.bytes(hex: hex) else { return forgetAll() }  // unreadable: be safe
        _ = state.withLock { $0.entries.removeValue(forKey: digest) }
    }

    /// The listener is (again) connected: start from empty and use the cache.
    package func listening() {
        state.withLock { state in
            state.entries.removeAll()
            state.listening = true
        }
    }

    /// The listener lost its connection: forget everything and stop using the cache.
    package func deaf() {
        state.withLock { state in
            state.entries.removeAll()
            state.listening = false
        }
    }

    func forgetAll() {
        state.withLock { $0.entries.removeAll() }
    }

    package var count: Int { state.withLock { $0.entries.count } }

    static func bytes(hex: String) -> [UInt8]? {
        let characters = Array(hex.utf8)
        guard characters.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(characters.count / 2)
        for index in stride(from: 0, to: characters.count, by: 2) {
            guard let high = nibble(characters[index]), let low = nibble(characters[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
