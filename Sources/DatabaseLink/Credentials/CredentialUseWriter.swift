import Logging
import PostgresNIO
import Synchronization

/// Writes credentials' last uses in the background (`BackgroundWriter`): the uses noted while
/// one write is under way go in the next, one statement for the login tokens and one for the API
/// keys, and no request waits for them.
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
    /// The uses noted since the last write: login tokens' and API keys' ids.
    struct Uses: BackgroundBatch, Sendable {
        var tokens: Set<Int64> = []
        var keys: Set<Int64> = []
        var isEmpty: Bool { tokens.isEmpty && keys.isEmpty }
        var count: Int { tokens.count + keys.count }
    }

    /// How many statements have written uses so far.
    private final class Written: Sendable {
        let statements = Atomic(0)
    }

    private let limit: Int
    private let written = Written()
    private let writer: BackgroundWriter<Uses>

    package init(database: Database, limit: Int = 100_000) {
        self.limit = limit
        let written = written
        writer = BackgroundWriter(logger: database.logger, failure: "credential uses not written") { uses in
            if !uses.tokens.isEmpty {
                try await database.query("UPDATE access_tokens SET last_used_at = now() WHERE id = ANY(\(Array(uses.tokens)))")
                written.statements.add(1, ordering: .relaxed)
            }
            if !uses.keys.isEmpty {
                try await database.query("UPDATE api_keys SET last_used_at = now() WHERE id = ANY(\(Array(uses.keys)))")
                written.statements.add(1, ordering: .relaxed)
            }
        }
    }

    /// Notes that the login token with this id was used now; returns at once.
    package func noteToken(id: Int64) {
        writer.note { if $0.tokens.count < limit { $0.tokens.insert(id) } }
    }

    /// Notes that the API key with this id was used now; returns at once.
    package func noteKey(id: Int64) {
        writer.note { if $0.keys.count < limit { $0.keys.insert(id) } }
    }

    /// How many statements have written uses so far.
    package var statements: Int { written.statements.load(ordering: .relaxed) }
}
