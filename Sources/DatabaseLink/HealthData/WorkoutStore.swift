import Data4HelpCore
import Foundation
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

    /// Stores `workouts` inside an ingest transaction (they commit with the import's batch);
    /// answers how many were new — the rest were there already (same identity). Absent figures
    /// travel as NaN (no arrays of optionals in a bind) and are stored as NULL.
    package func insert(_ workouts: [NewWorkout], importId: Int64?, in transaction: IngestTransaction) async throws -> Int {
        guard !workouts.isEmpty else { return 0 }
        let rows = try await transaction.connection.query(
            """
            INSERT INTO workouts (individual_id, client_id, activity, started_at, ended_at, distance_metres, energy_kilocalories,
                                  average_heart_rate, maximum_heart_rate, source, import_id)
            SELECT \(transaction.individualId), c, a, s, e, nullif(d, 'NaN'), nullif(k, 'NaN'), nullif(h, 'NaN'), nullif(m, 'NaN'),
                   nullif(o, ''), \(importId)
            FROM unnest(
                \(workouts.map(\.clientId))::text[], \(workouts.map(\.activity))::text[], \(workouts.map(\.start))::timestamptz[],
                \(workouts.map(\.end))::timestamptz[], \(workouts.map { $0.distanceMetres ?? .nan })::float8[],
                \(workouts.map { $0.energyKilocalories ?? .nan })::float8[], \(workouts.map { $0.averageHeartRate ?? .nan })::float8[],
                \(workouts.map { $0.maximumHeartRate ?? .nan })::float8[], \(workouts.map { $0.source ?? "" })::text[]
            ) AS w(c, a, s, e, d, k, h, m, o)
            ON CONFLICT (individual_id, client_id) DO NOTHING
            RETURNING 1
            """, logger: transaction.logger)
        return try await rows.collect().count
    }

    private static let columns = """
        w.id, w.public_id, w.activity, w.started_at, w.ended_at, w.distance_metres, w.energy_kilocalories,
        w.average_heart_rate, w.maximum_heart_rate, w.source, i.public_id
        """

    private static func record(_ row: PostgresRow) throws -> Workout {
        let (id, publicId, activity, start, end, distance, energy, average, maximum, source, importId) = try row.decode(
            (Int64, UUID, String, Date, Date, Double?, Double?, Double?, Double?, String?, UUID?).self
        )
        return Workout(
            sequence: id, id: publicId, activity: activity, start: start, end: end, distanceMetres: distance, energyKilocalories: energy,
            averageHeartRate: average, maximumHeartRate: maximum, source: source, importId: importId
        )
    }

    /// The individual's workouts, latest start first, `limit` of them after the workout with
    /// row id `beforeId` in that order.
    package func list(individualId: Int64, limit: Int, beforeId: Int64?) async throws -> [Workout] {
        let rows = try await database.query(
            """
            SELECT \(unescaped: Self.columns) FROM workouts w LEFT JOIN imports i ON i.id = w.import_id
            WHERE w.individual_id = \(individualId)
              AND (\(beforeId)::bigint IS NULL
                   OR (w.started_at, w.id) < (SELECT started_at, id FROM workouts WHERE id = \(beforeId) AND individual_id = \(individualId)))
            ORDER BY w.started_at DESC, w.id DESC LIMIT \(Int64(limit))
            """)  // index: workouts_individual_idx
        return try rows.map(Self.record)
    }

    package func find(_ publicId: UUID, individualId: Int64) async throws -> Workout? {
        let rows = try await database.query(
            """
            SELECT \(unescaped: Self.columns) FROM workouts w LEFT JOIN imports i ON i.id = w.import_id
            WHERE w.public_id = \(publicId) AND w.individual_id = \(individualId)
            """)
        return try rows.first.map(Self.record)
    }
}
