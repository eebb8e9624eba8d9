import Data4HelpCore
import Foundation
import PostgresNIO

/// `resting_heart_rates`: each computed night (a local day, `yyyy-MM-dd`), its value if it has
/// one, and the fingerprint of what it was computed from (migration 0041). A trigger keeps each
/// value as the day's rollup of type `restingHeartRate`, which aggregates read.
package struct RestingHeartRateStore: Sendable {
    package struct Night: Sendable, Equatable {
        package let day: String
        package let fingerprint: String
        package let bpm: Double?
        package let windowStartMs: Int64?

        package init(day: String, fingerprint: String, bpm: Double?, windowStartMs: Int64?) {
            self.day = day
            self.fingerprint = fingerprint
            self.bpm = bpm
            self.windowStartMs = windowStartMs
        }
    }

    let database: Database
    /// `sample_types.code` of heart rate, whose readings resting heart rate is computed from
    /// (HealthSharing's `SampleType.heartRate.storageCode`).
    let heartRateCode: Int16

    package init(database: Database, heartRateCode: Int16) {
        self.database = database
        self.heartRateCode = heartRateCode
    }

    /// The row version (`xmin`) of each heart-rate daily rollup in `[first, last]`: an upload that
    /// adds a reading to a day rewrites its rollup row, so a new version means new readings. Index:
    /// the rollups' primary key.
    package func heartRateDayVersions(individualId: Int64, first: String, last: String) async throws -> [String: String] {
        let rows = try await database.query(
            """
            SELECT day::text, xmin::text FROM daily_rollups
            WHERE individual_id = \(individualId) AND sample_type = \(heartRateCode) AND day BETWEEN \(first)::date AND \(last)::date
            """)
        var versions: [String: String] = [:]
        for row in rows {
            let (day, version) = try row.decode((String, String).self)
            versions[day] = version
        }
        return versions
    }

    /// People whose heart rate of a recent day (`days` back from today, UTC) has changed since
    /// that day's night was kept, or whose night was never kept: a night's fingerprint ends with
    /// the row versions of its days' rollups, as `/v1/v2/`. Index: `daily_rollups_type_day_idx`,
    /// then the nights' primary key.
    package func staleIndividuals(days: Int32, limit: Int) async throws -> [Int64] {
        let rows = try await database.query(
            """
            SELECT DISTINCT r.individual_id FROM daily_rollups r
            WHERE r.sample_type = \(heartRateCode) AND r.day >= current_date - \(days)
              AND NOT EXISTS (
                SELECT 1 FROM resting_heart_rates n
                WHERE n.individual_id = r.individual_id AND n.day = r.day AND strpos(n.fingerprint, '/' || r.xmin::text || '/') > 0)
            LIMIT \(limit)
            """)
        return try rows.map { try $0.decode(Int64.self) }
    }

    /// The kept nights in `[first, last]`.
    package func kept(individualId: Int64, first: String, last: String) async throws -> [String: Night] {
        let rows = try await database.query(
            """
            SELECT day::text, fingerprint, bpm, (extract(epoch FROM window_start) * 1000)::int8 FROM resting_heart_rates
            WHERE individual_id = \(individualId) AND day BETWEEN \(first)::date AND \(last)::date
            """)
        var nights: [String: Night] = [:]
        for row in rows {
            let (day, fingerprint, bpm, startMs) = try row.decode((String, String, Float?, Int64?).self)
            nights[day] = Night(day: day, fingerprint: fingerprint, bpm: bpm.map(Double.init), windowStartMs: startMs)
        }
        return nights
    }

    /// Keeps (or replaces) these nights, in one statement.
    package func save(individualId: Int64, _ nights: [Night]) async throws {
        guard !nights.isEmpty else { return }
        let days = nights.map(\.day), fingerprints = nights.map(\.fingerprint)
        // No value: bpm 0 (no heart beats at 0), written as NULL.
        let values = nights.map { Float($0.bpm ?? 0) }, starts = nights.map { $0.windowStartMs ?? 0 }
        try await database.query(
            """
            INSERT INTO resting_heart_rates (individual_id, day, fingerprint, bpm, window_start)
            SELECT \(individualId), n.day::date, n.fingerprint, NULLIF(n.bpm, 0),
                   CASE WHEN n.bpm > 0 THEN 'epoch'::timestamptz + n.start_ms * interval '1 millisecond' END
            FROM unnest(\(days)::text[], \(fingerprints)::text[], \(values)::float4[], \(starts)::int8[]) AS n(day, fingerprint, bpm, start_ms)
            ON CONFLICT (individual_id, day) DO UPDATE SET
                fingerprint = EXCLUDED.fingerprint, bpm = EXCLUDED.bpm, window_start = EXCLUDED.window_start, computed_at = now()
            """)
    }
}
