import Data4HelpCore
import Foundation
import Logging
import PostgresNIO

/// A workout to store: the device's totals for one activity; `clientId` from its identity.
package struct NewWorkout: Sendable, Equatable {
    package var clientId: String
    package var activity: String
    package var start: Date
    package var end: Date
    package var distanceMetres: Double?
    package var energyKilocalories: Double?
    package var averageHeartRate: Double?
    package var maximumHeartRate: Double?
    package var source: String?
    /// The run event it was run in (a Track4Run finish), if it was.
    package var runId: Int64?

    package init(clientId: String, activity: String, start: Date, end: Date) {
        self.clientId = clientId
        self.activity = activity
        self.start = start
        self.end = end
    }
}

/// Workouts (`workouts`): stored in an import's transaction, read by their owner.
package struct WorkoutStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    /// Stores an import's `workouts` inside its batch's ingest transaction (they commit with the
    /// batch); answers how many were new — the rest were there already (same identity) — and
    /// their starts. Absent figures travel as NaN (no arrays of optionals in a bind) and are
    /// stored as NULL. Nothing is announced: the import announces what it stored when it ends.
    package func insert(_ workouts: [NewWorkout], importId: Int64?, in transaction: IngestTransaction) async throws -> (stored: Int, span: DataSpan?)
    {
        try await Self.insert(
            workouts, importId: importId, individualId: transaction.individualId, announce: false, on: transaction.connection,
            logger: transaction.logger)
    }

    /// `insert(_:importId:in:)` on a transaction's connection. With `announce` (a Track4Run finish,
    /// stored in the transaction that records it), every active subscribed grant that covers a
    /// new workout (`workout` granted, its start in the window) gets one `data.created` party
    /// event listing them, as new samples do.
    static func insert(
        _ workouts: [NewWorkout], importId: Int64?, individualId: Int64, announce: Bool, on connection: LeasedConnection, logger: Logger
    ) async throws -> (stored: Int, span: DataSpan?) {
        guard !workouts.isEmpty else { return (0, nil) }
        let rows = try await connection.query(
            """
            WITH inserted AS (
                INSERT INTO workouts (individual_id, client_id, activity, started_at, ended_at, distance_metres, energy_kilocalories,
                                      average_heart_rate, maximum_heart_rate, source, import_id, run_id)
                SELECT \(individualId), c, a, s, e, nullif(d, 'NaN'), nullif(k, 'NaN'), nullif(h, 'NaN'), nullif(m, 'NaN'),
                       nullif(o, ''), \(importId), nullif(r, 0)
                FROM unnest(
                    \(workouts.map(\.clientId))::text[], \(workouts.map(\.activity))::text[], \(workouts.map(\.start))::timestamptz[],
                    \(workouts.map(\.end))::timestamptz[], \(workouts.map { $0.distanceMetres ?? .nan })::float8[],
                    \(workouts.map { $0.energyKilocalories ?? .nan })::float8[], \(workouts.map { $0.averageHeartRate ?? .nan })::float8[],
                    \(workouts.map { $0.maximumHeartRate ?? .nan })::float8[], \(workouts.map { $0.source ?? "" })::text[],
                    \(workouts.map { $0.runId ?? 0 })::int8[]
                ) AS w(c, a, s, e, d, k, h, m, o, r)
                ON CONFLICT (individual_id, client_id) DO NOTHING
                RETURNING id, (extract(epoch FROM started_at) * 1000)::int8 AS start_ms
            ),
            events AS (    -- the outbox, as for samples: subscribed grants that include 'workout'
                INSERT INTO party_events (third_party_id, request_id, individual_id, first_ms, last_ms, kinds, keys)
                SELECT r.third_party_id, r.id, \(individualId), min(n.start_ms), max(n.start_ms), ARRAY['workout'], array_agg(n.id)
                FROM access_requests r JOIN inserted n ON true
                WHERE r.individual_id = \(individualId) AND r.subscribe AND access_grant_active(r.status, r.granted_until) AND \(announce)
                  AND access_grant_covers(r.granted_types, r.granted_from, r.granted_to, 'workout', n.start_ms)
                GROUP BY r.id, r.third_party_id
            )
            SELECT count(*)::int8, min(start_ms), max(start_ms) FROM inserted
            """, logger: logger)
        var result: (stored: Int, span: DataSpan?) = (0, nil)
        for try await (count, first, last) in rows.decode((Int, Int64?, Int64?).self) {
            result = (count, first.flatMap { first in last.map { DataSpan(firstMs: first, lastMs: $0) } })
        }
        return result
    }

    private static let columns = """
        w.id, w.public_id, w.activity, w.started_at, w.ended_at, w.distance_metres, w.energy_kilocalories,
        w.average_heart_rate, w.maximum_heart_rate, w.source, i.public_id, e.public_id
        """

    private static func record(_ row: PostgresRow) throws -> Workout {
        let (id, publicId, activity, start, end, distance, energy, average, maximum, source, importId, runId) = try row.decode(
            (Int64, UUID, String, Date, Date, Double?, Double?, Double?, Double?, String?, UUID?, UUID?).self
        )
        return Workout(
            sequence: id, id: publicId, activity: activity, start: start, end: end, distanceMetres: distance, energyKilocalories: energy,
            averageHeartRate: average, maximumHeartRate: maximum, source: source, importId: importId, runId: runId
        )
    }

    /// The individual's workouts that start in `[from, to)` (open ends when nil), latest start
    /// first, `limit` of them after the workout with row id `beforeId` in that order.
    package func list(individualId: Int64, from: Date? = nil, to: Date? = nil, limit: Int, beforeId: Int64?) async throws -> [Workout] {
        let rows = try await database.query(
            """
            SELECT \(unescaped: Self.columns) FROM workouts w LEFT JOIN imports i ON i.id = w.import_id LEFT JOIN run_events e ON e.id = w.run_id
            WHERE w.individual_id = \(individualId)
              AND (\(from)::timestamptz IS NULL OR w.started_at >= \(from)) AND (\(to)::timestamptz IS NULL OR w.started_at < \(to))
              AND (\(beforeId)::bigint IS NULL
                   OR (w.started_at, w.id) < (SELECT started_at, id FROM workouts WHERE id = \(beforeId) AND individual_id = \(individualId)))
            ORDER BY w.started_at DESC, w.id DESC LIMIT \(Int64(limit))
            """)  // index: workouts_individual_idx
        return try rows.map(Self.record)
    }

    /// The individual's workouts with these row ids (a `data.created` event's keys), by start.
    package func workouts(individualId: Int64, ids: [Int64]) async throws -> [Workout] {
        let rows = try await database.query(
            """
            SELECT \(unescaped: Self.columns) FROM workouts w LEFT JOIN imports i ON i.id = w.import_id LEFT JOIN run_events e ON e.id = w.run_id
            WHERE w.individual_id = \(individualId) AND w.id = ANY (\(ids)::int8[])
            ORDER BY w.started_at, w.id
            """)  // index: the primary key
        return try rows.map(Self.record)
    }

    package func find(_ publicId: UUID, individualId: Int64) async throws -> Workout? {
        let rows = try await database.query(
            """
            SELECT \(unescaped: Self.columns) FROM workouts w LEFT JOIN imports i ON i.id = w.import_id LEFT JOIN run_events e ON e.id = w.run_id
            WHERE w.public_id = \(publicId) AND w.individual_id = \(individualId)
            """)
        return try rows.first.map(Self.record)
    }
}
