import Data4HelpCore
import Foundation
import Logging
import PostgresNIO

/// What becomes of a delivery after an attempt.
package enum DeliveryOutcome: Sendable {
    case delivered
    case retry(at: Date)
    case failed
    /// Nothing to send any more (a data event whose grant ended); no attempt is recorded.
    case cancelled
}

/// `webhook_endpoints`, `webhook_deliveries` and `webhook_attempts`: where accounts want their
/// events, and the outbox the dispatchers of every instance work through.
package struct WebhookStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    // MARK: Endpoints

    /// Sets the owner's endpoint URL. A new endpoint gets `newSecret`, which is returned (to be
    /// shown once); an existing one keeps its secret and nil is returned.
    package func setEndpoint(owner: AccountReference, url: String, newSecret: String) async throws -> String? {
        let column = owner.ownerColumn
        let rows = try await database.query(
            """
            INSERT INTO webhook_endpoints (\(unescaped: column), url, secret) VALUES (\(owner.accountId), \(url), \(newSecret))
            ON CONFLICT (\(unescaped: column)) DO UPDATE SET url = EXCLUDED.url, updated_at = now()
            RETURNING xmax = 0
            """)
        let inserted = try rows.first?.decode(Bool.self) ?? false
        return inserted ? newSecret : nil
    }

    package func endpoint(owner: AccountReference) async throws -> WebhookEndpointRecord? {
        let rows = try await database.query(
            """
            SELECT url, created_at, updated_at FROM webhook_endpoints WHERE \(unescaped: owner.ownerColumn) = \(owner.accountId)
            """)
        return try rows.first.map { row in
            let (url, created, updated) = try row.decode((String, Date, Date).self)
            return WebhookEndpointRecord(url: url, createdAt: created, updatedAt: updated)
        }
    }

    /// Replaces the endpoint's secret; false when the owner has no endpoint.
    package func rotateSecret(owner: AccountReference, newSecret: String) async throws -> Bool {
        let rows = try await database.query(
            """
            UPDATE webhook_endpoints SET secret = \(newSecret), updated_at = now()
            WHERE \(unescaped: owner.ownerColumn) = \(owner.accountId) RETURNING id
            """)
        return !rows.isEmpty
    }

    /// Removes the endpoint, and with it its pending deliveries and log; false when there was none.
    package func deleteEndpoint(owner: AccountReference) async throws -> Bool {
        let rows = try await database.query(
            """
            DELETE FROM webhook_endpoints WHERE \(unescaped: owner.ownerColumn) = \(owner.accountId) RETURNING id
            """)
        return !rows.isEmpty
    }

    /// Queues a message with its own body (a test ping) for the owner's endpoint, on its own;
    /// nil when the owner has no endpoint. (A message that reports a change is queued in that
    /// change's transaction: `WebhookOutbox`.)
    package func enqueue(_ message: OutboxMessage, owner: AccountReference) async throws -> UUID? {
        try await database.withConnection { connection in
            try await WebhookOutbox.enqueue(message, to: .endpoint(of: owner), on: connection, logger: database.logger).first
        }
    }

    // MARK: Dispatching

    /// Claims up to `limit` due deliveries for one attempt each, leasing them for `lease` (an
    /// instance that dies mid-attempt leaves them to be claimed again when the lease runs out).
    /// A delivery waits while an earlier one of the same request is pending, so each grant's
    /// events arrive in order; `SKIP LOCKED` lets several instances claim side by side.
    package func claim(limit: Int, lease: Duration) async throws -> [ClaimedDelivery] {
        let statement = WebhookClaimStatement(limit: limit, leaseMs: lease.wholeMilliseconds)
        return try await database.withConnection { connection in
            try await connection.execute(statement, logger: database.logger)
        }
    }

    /// Records how the claimed attempt went, and what it disclosed, in one statement (one commit,
    /// one round trip). Ignored when the lease had run out and another instance has claimed the
    /// delivery again since (its own attempt decides) — except the disclosure: the body may have
    /// reached the receiver all the same, and the individual's log says so.
    package func finish(
        _ delivery: ClaimedDelivery, attempt: DeliveryAttemptRecord?, outcome: DeliveryOutcome, disclosure: NewDisclosure? = nil
    ) async throws {
        let (state, nextMs): (String, Int64?) =
            switch outcome {
            case .delivered: ("delivered", nil)
            case .retry(let at): ("pending", at.epochMilliseconds)
            case .failed: ("failed", nil)
            case .cancelled: ("cancelled", nil)
            }
        let statement: PostgresQuery = """
            WITH updated AS (
                UPDATE webhook_deliveries
                SET state = \(state),
                    next_attempt_at = COALESCE('epoch'::timestamptz + \(nextMs) * interval '1 millisecond', next_attempt_at),
                    finished_at = CASE WHEN \(state) = 'pending' THEN NULL ELSE now() END
                WHERE id = \(delivery.id) AND attempts = \(Int32(delivery.attempt)) AND state = 'pending'
                RETURNING id
            ),
            attempted AS (
                INSERT INTO webhook_attempts (delivery_id, attempt, at, duration_ms, status_code, error)
                SELECT id, \(attempt.map { Int32(clamping: $0.attempt) })::int4, \(attempt?.at)::timestamptz,
                       \(attempt.map { Int32(clamping: $0.durationMs) })::int4, \(attempt?.statusCode.map(Int32.init(clamping:)))::int4,
                       \(attempt?.error)::text
                FROM updated WHERE \(attempt != nil)
                ON CONFLICT DO NOTHING
            ),
            disclosed AS (
                INSERT INTO disclosures (individual_id, third_party_id, request_id, channel, types, item_count)
                SELECT \(disclosure?.individualId)::int8, \(disclosure?.thirdPartyId)::int8, \(disclosure?.requestId)::int8,
                       \(disclosure?.channel)::text, \(disclosure?.types)::text[], \(disclosure.map { Int32(clamping: $0.itemCount) })::int4
                WHERE \(disclosure != nil)
            )
            SELECT count(*)::int8 FROM updated
            """
        // A delivery that went through after failures, or the owner's ping, brings the endpoint's
        // waiting deliveries forward in the same transaction.
        guard case .delivered = outcome, attempt != nil, delivery.roundAttempt > 1 || delivery.eventType == "ping" else {
            try await database.query(statement)
            return
        }
        try await database.withTransaction { connection in
            let updated = try await connection.query(statement, logger: database.logger).collect().first?.decode(Int64.self) ?? 0
            if updated > 0 { try await Self.resumeWaiting(endpointOf: delivery.id, on: connection, logger: database.logger) }
        }
    }

    /// The endpoint is back — a delivery that had failed went through, or the owner's test
    /// ping did: its deliveries waiting for a later retry are due now, rather than each at its
    /// own slot of the backoff (after an outage of hours, up to 3 h later). Deliveries whose
    /// attempt is under way (claimed, not yet recorded) keep their lease. Dispatchers on every
    /// instance hear of it at the commit, as of a new delivery.
    private static func resumeWaiting(endpointOf deliveryId: Int64, on connection: LeasedConnection, logger: Logger) async throws {
        try await connection.query(
            """
            WITH resumed AS (
                UPDATE webhook_deliveries d SET next_attempt_at = now()
                WHERE d.endpoint_id = (SELECT endpoint_id FROM webhook_deliveries WHERE id = \(deliveryId))
                  AND d.state = 'pending' AND d.next_attempt_at > now()
                  AND EXISTS (SELECT 1 FROM webhook_attempts a WHERE a.delivery_id = d.id AND a.attempt = d.attempts)
                RETURNING d.id
            )
            SELECT pg_notify(\(EventListener.channel), '') WHERE EXISTS (SELECT 1 FROM resumed)
            """, logger: logger)
    }

    // MARK: The log

    /// The owner's deliveries, newest first, each with its attempts — read by one statement, so
    /// in one snapshot: a delivery is never listed with an attempt recorded after its state was read
    /// (two reads once showed an attempt next to the lease of the claim that made it).
    package func deliveries(owner: AccountReference, beforeId: Int64?, limit: Int) async throws -> [DeliveryRecord] {
        let rows = try await database.query(
            """
            WITH page AS (
                SELECT d.id, d.public_id, d.event_type, r.public_id AS request_public_id, d.state, d.created_at,
                       CASE WHEN d.state = 'pending' THEN d.next_attempt_at END AS next_attempt_at, d.finished_at
                FROM webhook_deliveries d
                JOIN webhook_endpoints w ON w.id = d.endpoint_id
                LEFT JOIN access_requests r ON r.id = d.request_id
                WHERE w.\(unescaped: owner.ownerColumn) = \(owner.accountId) AND d.id < \(beforeId ?? Int64.max)
                ORDER BY d.id DESC LIMIT \(limit)
            )
            SELECT p.id, p.public_id, p.event_type, p.request_public_id, p.state, p.created_at, p.next_attempt_at, p.finished_at,
                   a.attempt, a.at, a.duration_ms, a.status_code, a.error
            FROM page p LEFT JOIN webhook_attempts a ON a.delivery_id = p.id
            ORDER BY p.id DESC, a.attempt
            """)
        var records: [DeliveryRecord] = []
        for row in rows {
            let r = try row.decode((Int64, UUID, String, UUID?, String, Date, Date?, Date?, Int32?, Date?, Int32?, Int32?, String?).self)
            if records.last?.id != r.0 {
                records.append(
                    DeliveryRecord(
                        id: r.0, publicId: r.1, eventType: r.2, requestPublicId: r.3, state: r.4, createdAt: r.5,
                        nextAttemptAt: r.6, finishedAt: r.7, attempts: []
                    ))
            }
            if let attempt = r.8, let at = r.9, let duration = r.10 {
                records[records.count - 1].attempts.append(
                    DeliveryAttemptRecord(attempt: Int(attempt), at: at, durationMs: Int(duration), statusCode: r.11.map(Int.init), error: r.12))
            }
        }
        return records
    }

    /// One of the owner's deliveries.
    package func delivery(owner: AccountReference, publicId: UUID) async throws -> DeliveryRecord? {
        let rows = try await database.query(
            """
            SELECT d.id FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id
            WHERE w.\(unescaped: owner.ownerColumn) = \(owner.accountId) AND d.public_id = \(publicId)
            """)
        guard let id = try rows.first?.decode(Int64.self) else { return nil }
        return try await deliveries(owner: owner, beforeId: id + 1, limit: 1).first
    }

    /// Sends a finished delivery again, with a fresh round of attempts and the same delivery id
    /// (receivers that already have it drop it). Nil when the owner has no such delivery, false
    /// when it is still pending.
    package func redeliver(owner: AccountReference, publicId: UUID) async throws -> Bool? {
        let reopened = try await database.query(
            """
            UPDATE webhook_deliveries d SET state = 'pending', round_attempts = 0, next_attempt_at = now(), finished_at = NULL
            FROM webhook_endpoints w
            WHERE w.id = d.endpoint_id AND w.\(unescaped: owner.ownerColumn) = \(owner.accountId)
              AND d.public_id = \(publicId) AND d.state <> 'pending'
            RETURNING d.id
            """)
        if !reopened.isEmpty {
            try await database.query("SELECT pg_notify(\(EventListener.channel), '')")
            return true
        }
        return try await delivery(owner: owner, publicId: publicId) == nil ? nil : false
    }
}

/// `WebhookStore.claim`: a prepared statement, since every dispatcher worker of every instance runs
/// it whenever an event or a delivery is announced, mostly to find nothing (parse and plan were
/// 0.6 of its 0.7 ms).
struct WebhookClaimStatement: PostgresPreparedStatement {
    static let name = "data4help_webhook_claim"
    static let sql = """
        WITH due AS (   -- index: webhook_deliveries_due_idx, webhook_deliveries_order_idx
            SELECT d.id FROM webhook_deliveries d
            WHERE d.state = 'pending' AND d.next_attempt_at <= now()
              AND NOT EXISTS (
                  SELECT 1 FROM webhook_deliveries earlier
                  WHERE earlier.endpoint_id = d.endpoint_id AND earlier.request_id = d.request_id
                    AND earlier.state = 'pending' AND earlier.id < d.id)
            ORDER BY d.next_attempt_at, d.id
            LIMIT $1
            FOR UPDATE SKIP LOCKED
        )
        UPDATE webhook_deliveries d
        SET attempts = d.attempts + 1, round_attempts = d.round_attempts + 1,
            next_attempt_at = now() + $2 * interval '1 millisecond'
        FROM due, webhook_endpoints w
        WHERE d.id = due.id AND w.id = d.endpoint_id
        RETURNING d.id, d.public_id, d.attempts, d.round_attempts, d.event_type, d.created_at, d.event_id, d.payload::text, w.url, w.secret
        """

    typealias Row = ClaimedDelivery

    let limit: Int
    let leaseMs: Int64

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(limit)
        bindings.append(leaseMs)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        let r = try row.decode((Int64, UUID, Int32, Int32, String, Date, Int64?, String?, String, String).self)
        return ClaimedDelivery(
            id: r.0, publicId: r.1, attempt: Int(r.2), roundAttempt: Int(r.3), eventType: r.4, createdAt: r.5,
            eventId: r.6, payload: r.7, url: r.8, secret: r.9
        )
    }
}
