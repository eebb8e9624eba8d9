import Foundation
import Logging
import PostgresNIO

/// A queued message leased for sending.
package struct LeasedMail: Sendable, Equatable {
    package var id: Int64
    package var message: OutboundMessage
    /// Attempts before this one.
    package var attempts: Int32
}

/// The `outbound_mail` outbox: messages are inserted with the change they report (see
/// `RegistrationStore.record`) and sent by whichever instance leases them first.
package struct OutboundMailStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    /// Queues `message` on the caller's connection (inside its transaction), unless its recipient
    /// was already sent `recipientCap` messages in the last hour: the caller's answer stays the
    /// same, so the cap tells nobody anything, and an address cannot be flooded through us.
    static func queue(_ message: OutboundMessage, recipientCap: Int, on connection: LeasedConnection, logger: Logger) async throws {
        _ = try await connection.query(
            """
            INSERT INTO outbound_mail (recipient, subject, body)
            SELECT \(message.recipient), \(message.subject), \(message.body)
            WHERE (SELECT count(*) FROM outbound_mail
                   WHERE recipient = \(message.recipient) AND created_at > now() - interval '1 hour') < \(recipientCap)
            """, logger: logger)  // index: outbound_mail_recipient_idx
    }

    /// Leases up to `limit` due messages for `leaseFor`: another instance takes them only if this
    /// one neither sends nor reschedules them in that time (it died).
    package func lease(limit: Int, leaseFor: Duration) async throws -> [LeasedMail] {
        let seconds = Double(leaseFor.components.seconds)
        let rows = try await database.query(
            """
            UPDATE outbound_mail SET leased_until = now() + make_interval(secs => \(seconds))
            WHERE id IN (
                SELECT id FROM outbound_mail
                WHERE sent_at IS NULL AND next_attempt_at <= now() AND (leased_until IS NULL OR leased_until < now())
                ORDER BY next_attempt_at LIMIT \(Int64(limit)) FOR UPDATE SKIP LOCKED)
            RETURNING id, recipient, subject, body, attempts
            """)  // index: outbound_mail_due_idx
        return try rows.map {
            let (id, recipient, subject, body, attempts) = try $0.decode((Int64, String, String, String, Int32).self)
            return LeasedMail(id: id, message: OutboundMessage(recipient: recipient, subject: subject, body: body), attempts: attempts)
        }
    }

    /// Records a message as sent and forgets its body (it may carry a confirmation token).
    package func markSent(id: Int64) async throws {
        try await database.query(
            """
            UPDATE outbound_mail SET sent_at = now(), body = '', leased_until = NULL, attempts = attempts + 1, last_error = NULL
            WHERE id = \(id)
            """)
    }

    /// Reschedules a message after a failed attempt; `retryAt` nil gives it up for good (its
    /// body is forgotten as for a sent one, `sent_at` stays empty and `last_error` says why).
    package func markFailed(id: Int64, retryAt: Date?, reason: String) async throws {
        if let retryAt {
            try await database.query(
                """
                UPDATE outbound_mail SET next_attempt_at = \(retryAt), leased_until = NULL, attempts = attempts + 1, last_error = \(reason)
                WHERE id = \(id)
                """)
        } else {
            try await database.query(
                """
                UPDATE outbound_mail SET next_attempt_at = 'infinity', body = '', leased_until = NULL, attempts = attempts + 1,
                                         last_error = \(reason)
                WHERE id = \(id)
                """)
        }
    }

    /// Deletes records of messages created before `cutoff` (sent or given up); returns how many.
    package func purge(createdBefore cutoff: Date) async throws -> Int {
        let rows = try await database.query(
            """
            WITH gone AS (DELETE FROM outbound_mail WHERE created_at < \(cutoff) AND (sent_at IS NOT NULL OR next_attempt_at = 'infinity')
                          RETURNING 1)
            SELECT count(*) FROM gone
            """)
        return Int(try rows[0].decode(Int64.self))
    }
}
