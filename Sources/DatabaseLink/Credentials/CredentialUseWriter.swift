import Logging
import PostgresNIO
import Synchronization

/// Writes credentials' last uses in the background: the uses noted while one write is under way
/// go in the next, one statement for the login tokens and one for the API keys, and no request
/// waits for them.
///
/// A credential's last use is shown to its owner ("last used"), to within a minute
/// (`Authenticator.lastUseResolution`); it is not data anyone was promised. Written in the
/// request, a stale credential's request waited for an `UPDATE` and its commit; at a race's mass
/// start 5,000 runners' first posts, all with a last use older than the period, made 5,000 such
/// commits in the race's first seconds, one per post (`bench live`'s city race: posts at p50
/// ~150 ms for its first six seconds against 20–30 after). A credential's first use ever is
/// still written in its request (`Authenticator`), so a listing right after it shows it used.
///
/// One that cannot be written (the database unreachable) is dropped with a warning; the next use
/// after the period notes it again. At most `limit` of each kind wait; beyond it, new ones are
/// dropped.
package final class CredentialUseWriter: Sendable {
    private let database: Database
    private let limit: Int
    private let state = Mutex<(tokens: Set<Int64>, keys: Set<Int64>, writing: Bool)>(([], [], false))
    private let written = Mutex(0)

    package init(database: Database, limit: Int = 100_000) {
        self.database = database
        self.limit = limit
    }

    /// Notes that the login token with this id was used now; returns at once.
    package func noteToken(id: Int64) {
        note { if $0.tokens.count < limit { $0.tokens.insert(id) } }
    }

    /// Notes that the API key with this id was used now; returns at once.
    package func noteKey(id: Int64) {
        note { if $0.keys.count < limit { $0.keys.insert(id) } }
    }

    /// How many statements have written uses so far.
    package var statements: Int { written.withLock { $0 } }

    private func note(_ add: (inout (tokens: Set<Int64>, keys: Set<Int64>, writing: Bool)) -> Void) {
        let start = state.withLock { state -> Bool in
            add(&state)
            defer { state.writing = true }
            return !state.writing
        }
        // Detached: the writes outlive the request that started them and carry others' uses
        // too, so they must not take its priority or task-local values.
        if start { Task.detached { await self.drain() } }
    }

    private func drain() async {
        while let (tokens, keys) = state.withLock({ state -> (Set<Int64>, Set<Int64>)? in
            guard !state.tokens.isEmpty || !state.keys.isEmpty else {
                state.writing = false
                return nil
            }
            defer { (state.tokens, state.keys) = ([], []) }
            return (state.tokens, state.keys)
        }) {
            do {
                if !tokens.isEmpty {
                    try await database.query("UPDATE access_tokens SET last_used_at = now() WHERE id = ANY(\(Array(tokens)))")
                    written.withLock { $0 += 1 }
                }
                if !keys.isEmpty {
                    try await database.query("UPDATE api_keys SET last_used_at = now() WHERE id = ANY(\(Array(keys)))")
                    written.withLock { $0 += 1 }
                }
            } catch {
                database.logger.warning(
                    "credential uses not written",
                    metadata: ["count": "\(tokens.count + keys.count)", "error.type": "\(String(reflecting: type(of: error)))"])
            }
        }
    }
}
