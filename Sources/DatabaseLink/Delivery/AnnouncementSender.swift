import Logging
import PostgresNIO
import Synchronization

/// Sends notifications on one channel after the transactions whose changes they announce have
/// committed, in statements of their own that do not wait for the disk.
///
/// Why not `pg_notify` inside the writing transaction: PostgreSQL takes one lock for the whole
/// database when a transaction that notified commits, and holds it until the commit is done,
/// its WAL flush included. Every notifying commit therefore waited for the previous one's
/// `fsync`, one at a time: a runner's post spent 1.7 ms at the median and 23 ms at the 99th
/// percentile in `COMMIT` (PostgreSQL's log of `bench live`'s city race), and the posts stopped at
/// about 230 a second, far below what the machine's other work allowed. Committed without a
/// notification, the posts share their flushes (group commit); the announcements follow in one
/// statement each (its own transaction, one round trip), which holds that lock for microseconds:
/// a transaction that wrote nothing but its notifications commits without waiting for the disk
/// (PostgreSQL flushes at commit only a transaction that wrote WAL before its commit record;
/// 200 such commits made 2 WAL syncs, as many as with `synchronous_commit` off), and an
/// announcement needs no durability of its own (the state it carries is already on disk).
///
/// Announcements queued while one statement is under way go in the next one together, in the
/// order they were queued (`BackgroundWriter`). One that cannot be sent (the database unreachable) is dropped with a
/// warning: what listeners miss is a live view's step, and the next announcement of the same
/// runner carries its newer state. At most `limit` wait; beyond it the oldest are dropped.
package final class AnnouncementSender: Sendable {
    private let database: Database
    private let channel: String
    private let limit: Int
    private let writer: BackgroundWriter<[String]>

    package init(database: Database, channel: String, limit: Int = 20_000) {
        self.database = database
        self.channel = channel
        self.limit = limit
        writer = BackgroundWriter(logger: database.logger, failure: "announcements not sent", metadata: ["channel": "\(channel)"]) { batch in
            try await database.query("SELECT count(pg_notify(\(channel), payload)) FROM unnest(\(batch)::text[]) AS a(payload)")
        }
    }

    /// Queues `payload` (at most 7,999 bytes, PostgreSQL's limit) and returns at once.
    package func send(_ payload: String) {
        let dropped = writer.note { pending -> Int in
            pending.append(payload)
            let excess = max(0, pending.count - limit)
            pending.removeFirst(excess)
            return excess
        }
        if dropped > 0 {
            database.logger.warning("announcements dropped: too many waiting", metadata: ["channel": "\(channel)", "dropped": "\(dropped)"])
        }
    }
}
