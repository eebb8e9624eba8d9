import Foundation
import PostgresNIO

/// The `login_failures` table: failed sign-ins per key (an account or a client address, as a
/// digest) in fixed windows, shared by every instance.
package struct LoginFailureStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    /// Seconds until the last of the keys that reached its limit in the current window reopens;
    /// nil when none has.
    package func closedFor(keys: [String], limits: [Int32], windowSeconds: Int32) async throws -> Int? {
        let rows = try await database.query(
            """
            SELECT ceil(extract(epoch FROM max(f.window_start) + \(windowSeconds)::int4 * interval '1 second' - now()))::int8
            FROM login_failures f JOIN unnest(\(keys)::text[], \(limits)::int4[]) AS l(key, maximum) ON f.key_digest = l.key
            WHERE f.failures >= l.maximum AND f.window_start > now() - \(windowSeconds)::int4 * interval '1 second'
            """)  // index: login_failures_pkey
        return try rows.first?.decode(Int64?.self).map { max(1, Int($0)) }
    }

    /// Counts one failure against each key, starting a new window where the last one is over.
    package func recordFailure(keys: [String], windowSeconds: Int32) async throws {
        try await database.query(
            """
            INSERT INTO login_failures AS f (key_digest, window_start, failures)
            SELECT key, now(), 1 FROM unnest(\(keys)::text[]) AS key
            ON CONFLICT (key_digest) DO UPDATE SET
                failures = CASE WHEN f.window_start > now() - \(windowSeconds)::int4 * interval '1 second' THEN f.failures + 1 ELSE 1 END,
                window_start = CASE WHEN f.window_start > now() - \(windowSeconds)::int4 * interval '1 second' THEN f.window_start ELSE now() END
            """)
    }

    /// Forgets a key's failures (an account's, once its password was given correctly).
    package func clear(key: String) async throws {
        try await database.query("DELETE FROM login_failures WHERE key_digest = \(key)")
    }

    /// Deletes windows that started before the cut-off; returns how many.
    package func purge(startedBefore cutoff: Date) async throws -> Int {
        try await database.query("DELETE FROM login_failures WHERE window_start < \(cutoff) RETURNING 1").count  // index: login_failures_window_idx
    }
}
