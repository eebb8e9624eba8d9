import Data4HelpCore
import Foundation
import PostgresNIO

/// `aggregate_subscriptions`: recomputed aggregates, claimed by any instance when due.
package struct AggregateSubscriptionStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    /// Subscribes to one of the party's answered queries (or changes the period of, and resumes,
    /// an existing subscription). Nil when the party has no such answered query.
    package func subscribe(
        thirdPartyId: Int64, query: UUID, period: String, firstRun: Date
    ) async throws -> (AggregateSubscriptionRecord, created: Bool)? {
        let rows = try await database.query(
            """
            INSERT INTO aggregate_subscriptions (third_party_id, query_id, period, next_run_at)
            SELECT \(thirdPartyId), q.id, \(period), \(firstRun) FROM aggregate_queries q
            WHERE q.third_party_id = \(thirdPartyId) AND q.public_id = \(query) AND q.status = 'answered'
            ON CONFLICT (query_id) DO UPDATE SET period = EXCLUDED.period, status = 'active', stopped_reason = NULL,
                next_run_at = EXCLUDED.next_run_at
            RETURNING id, xmax = 0
            """)
        guard let row = rows.first else { return nil }
        let (id, created) = try row.decode((Int64, Bool).self)
        guard let record = try await find(id: id) else { return nil }
        return (record, created)
    }

    package func find(thirdPartyId: Int64, query: UUID) async throws -> AggregateSubscriptionRecord? {
        try await database.query(
            """
            SELECT \(unescaped: Self.columns) \(unescaped: Self.from) WHERE s.third_party_id = \(thirdPartyId) AND q.public_id = \(query)
            """
        ).first.map(Self.record)
    }

    func find(id: Int64) async throws -> AggregateSubscriptionRecord? {
        try await database.query("SELECT \(unescaped: Self.columns) \(unescaped: Self.from) WHERE s.id = \(id)").first.map(Self.record)
    }

    /// Stops it at the party's request; false when there is none.
    package func unsubscribe(thirdPartyId: Int64, query: UUID) async throws -> Bool {
        !(try await database.query(
            """
            UPDATE aggregate_subscriptions s SET status = 'stopped', stopped_reason = 'unsubscribed'
            FROM aggregate_queries q
            WHERE q.id = s.query_id AND s.third_party_id = \(thirdPartyId) AND q.public_id = \(query)
            RETURNING s.id
            """)).isEmpty
    }

    /// Claims due subscriptions for one run each, leasing them for `lease` (a run that dies
    /// leaves them to be claimed again).
    package func claimDue(limit: Int, lease: Duration) async throws -> [AggregateSubscriptionRecord] {
        let ids = try await database.query(
            """
            WITH due AS (
                SELECT id FROM aggregate_subscriptions WHERE status = 'active' AND next_run_at <= now()
                ORDER BY next_run_at LIMIT \(limit) FOR UPDATE SKIP LOCKED
            )
            UPDATE aggregate_subscriptions s SET next_run_at = now() + \(lease.components.seconds) * interval '1 second'
            FROM due WHERE s.id = due.id RETURNING s.id
            """
        ).map { try $0.decode(Int64.self) }
        var records: [AggregateSubscriptionRecord] = []
        for id in ids { if let record = try await find(id: id) { records.append(record) } }
        return records
    }

    /// Records a recomputation and tells the party (`aggregate.updated`), in one transaction.
    package func recordRun(_ subscription: AggregateSubscriptionRecord, queryId: Int64, nextRunAt: Date, announce: Bool) async throws {
        try await database.withTransaction { connection in
            _ = try await connection.query(
                """
                UPDATE aggregate_subscriptions SET last_query_id = \(queryId), next_run_at = \(nextRunAt), runs = runs + 1
                WHERE id = \(subscription.id)
                """, logger: database.logger)
            if announce {
                _ = try await connection.query(
                    """
                    INSERT INTO party_events (third_party_id, aggregate_id, event_type)
                    VALUES (\(subscription.thirdPartyId), \(queryId), 'aggregate.updated')
                    """, logger: database.logger)
            }
        }
    }

    /// Stops the subscription and tells the party why (`aggregate.stopped`, about the approved query).
    package func stop(_ subscription: AggregateSubscriptionRecord, reason: String) async throws {
        try await database.withTransaction { connection in
            _ = try await connection.query(
                """
                UPDATE aggregate_subscriptions SET status = 'stopped', stopped_reason = \(reason) WHERE id = \(subscription.id)
                """, logger: database.logger)
            _ = try await connection.query(
                """
                INSERT INTO party_events (third_party_id, aggregate_id, event_type)
                VALUES (\(subscription.thirdPartyId), \(subscription.queryId), 'aggregate.stopped')
                """, logger: database.logger)
        }
    }

    private static let from = """
        FROM aggregate_subscriptions s JOIN aggregate_queries q ON q.id = s.query_id
        LEFT JOIN aggregate_queries l ON l.id = s.last_query_id
        """
    private static let columns = """
        s.id, s.public_id, s.third_party_id, s.query_id, q.public_id, q.spec::text, l.public_id, s.created_at, s.next_run_at,
        s.runs, s.period, s.status, s.stopped_reason
        """

    private static func record(_ row: PostgresRow) throws -> AggregateSubscriptionRecord {
        let r = try row.decode((Int64, UUID, Int64, Int64, UUID, String, UUID?, Date, Date, Int32, String, AggregateSubscriptionStatus, String?).self)
        return AggregateSubscriptionRecord(
            id: r.0, publicId: r.1, thirdPartyId: r.2, queryId: r.3, queryPublicId: r.4, spec: r.5, lastQueryPublicId: r.6,
            createdAt: r.7, nextRunAt: r.8, runs: Int(r.9), period: r.10, status: r.11, stoppedReason: r.12
        )
    }
}
