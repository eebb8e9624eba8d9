import Data4HelpCore
import Foundation
import PostgresNIO

/// `workout_analyses`: each workout's analysis as computed, with the fingerprint of its inputs.
package struct WorkoutAnalysisStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    /// For each window `[startMs, endMs]`, which versions of the blocks of one type that may hold
    /// its readings are stored now: a digest of each block's start and row version (`xmin`), which
    /// changes whenever a reading in it is added, changed or removed. Nothing is unnested (a
    /// reading added to the same block outside the window also changes it: a recomputation too
    /// many, never one too few). One statement for all windows; index: the blocks' primary key,
    /// probed once per window (an aggregate in a lateral subquery is never flattened into a join).
    package func fingerprints(individualId: Int64, type: Int16, windows: [(startMs: Int64, endMs: Int64)]) async throws -> [String] {
        guard !windows.isEmpty else { return [] }
        let starts = windows.map { HealthDataReader.floorWindow($0.startMs) }, ends = windows.map(\.endMs)
        let rows = try await database.query(
            """
            SELECT f.digest FROM unnest(\(starts)::int8[], \(ends)::int8[]) WITH ORDINALITY AS w(h, e, n)
            CROSS JOIN LATERAL (
                SELECT coalesce(md5(string_agg(b.block_start::text || '/' || b.xmin::text, ',' ORDER BY b.block_start)), 'none') AS digest
                FROM sample_blocks b
                WHERE b.individual_id = \(individualId) AND b.sample_type = \(type)
                  AND b.block_start >= 'epoch'::timestamptz + w.h * interval '1 millisecond'
                  AND b.block_start <= 'epoch'::timestamptz + w.e * interval '1 millisecond'
            ) f
            ORDER BY w.n
            """)
        return try rows.map { try $0.decode(String.self) }
    }

    /// Workouts stored in the last `days` days that have no kept analysis yet (internal ids, with
    /// their owner). Index: `workouts_created_idx`.
    package func unanalysed(days: Int32, limit: Int) async throws -> [(individualId: Int64, workoutId: Int64)] {
        let rows = try await database.query(
            """
            SELECT w.individual_id, w.id FROM workouts w
            WHERE w.created_at > now() - \(days) * interval '1 day'
              AND NOT EXISTS (SELECT 1 FROM workout_analyses a WHERE a.workout_id = w.id)
            ORDER BY w.individual_id LIMIT \(limit)
            """)
        return try rows.map { try $0.decode((Int64, Int64).self) }.map { (individualId: $0.0, workoutId: $0.1) }
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
