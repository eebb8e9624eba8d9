import Data4HelpCore
import Foundation
import PostgresNIO

/// `workout_analyses`: each workout's analysis as computed, with the fingerprint of its inputs.
package struct WorkoutAnalysisStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    /// What the readings of one type in `[startMs, endMs]` add up to — count, keys, values — as
    /// text: any reading added, removed or changed there changes it. Read from the blocks, nothing
    /// sent back but three numbers (index: the blocks' primary key, as the listing's).
    package func fingerprint(individualId: Int64, type: Int16, startMs: Int64, endMs: Int64) async throws -> String {
        let rows = try await database.query(
            """
            SELECT count(*)::text || ':' || coalesce(sum(u.key), 0)::text || ':' || coalesce(sum(u.val::float8), 0)::text
            FROM sample_blocks b CROSS JOIN LATERAL unnest(b.offsets_ms, b.vals, b.keys) AS u(offset_ms, val, key)
            WHERE b.individual_id = \(individualId) AND b.sample_type = \(type)
              AND b.block_start >= 'epoch'::timestamptz + \(HealthDataReader.floorHour(startMs)) * interval '1 millisecond'
              AND b.block_start <= 'epoch'::timestamptz + \(endMs) * interval '1 millisecond'
              AND (extract(epoch FROM b.block_start) * 1000)::int8 + u.offset_ms BETWEEN \(startMs) AND \(endMs)
            """)
        return try rows[0].decode(String.self)
    }

    /// The kept analyses of these workouts (internal ids): fingerprint and JSON.
    package func stored(workoutIds: [Int64]) async throws -> [Int64: (fingerprint: String, json: String)] {
        guard !workoutIds.isEmpty else { return [:] }
        let rows = try await database.query(
            "SELECT workout_id, fingerprint, analysis::text FROM workout_analyses WHERE workout_id = ANY (\(workoutIds)::int8[])")
        var stored: [Int64: (fingerprint: String, json: String)] = [:]
        for row in rows {
            let (id, fingerprint, json) = try row.decode((Int64, String, String).self)
            stored[id] = (fingerprint, json)
        }
        return stored
    }

    /// Keeps (or replaces) a workout's analysis.
    package func save(workoutId: Int64, individualId: Int64, fingerprint: String, json: String) async throws {
        try await database.query(
            """
            INSERT INTO workout_analyses (workout_id, individual_id, fingerprint, analysis)
            VALUES (\(workoutId), \(individualId), \(fingerprint), \(json)::jsonb)
            ON CONFLICT (workout_id) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, analysis = EXCLUDED.analysis, computed_at = now()
            """)
    }
}
