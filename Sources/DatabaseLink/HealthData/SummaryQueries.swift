import Data4HelpCore
import Foundation
import PostgresNIO

/// One bucket of a summary: statistics over the samples whose start falls in it.
package struct SummaryRow: Sendable, Equatable {
    /// The bucket's start (local midnight, or the local hour), as an instant in epoch milliseconds.
    package var bucketStartMs: Int64
    package var count: Int
    package var sum: Double
    package var min: Float
    package var max: Float
}

/// Per-bucket statistics of an individual's samples of one type.
package struct SummaryQueries: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    /// Buckets whose start lies in `[fromMs, toMs)`, oldest first, with the time zone they are in.
    ///
    /// Days and weeks (Monday first) come from `daily_rollups` — a year of daily summaries reads
    /// 365 rows of the primary key; hours are computed from the sample blocks of the window. Both
    /// count one source per minute where several overlap (migration 0029).
    package func summary(
        individualId: Int64, type: Int16, bucket: SummaryBucket, fromMs: Int64, toMs: Int64
    ) async throws -> (timeZone: String, rows: [SummaryRow]) {
        let query: PostgresQuery
        switch bucket {
        case .hour:
            query = """
                WITH zone AS (SELECT time_zone FROM individuals WHERE id = \(individualId)),
                samples AS (   -- one source per minute where a day has several (migration 0029)
                    SELECT c.start, c.val, c.share
                    FROM data4help_counted_samples(
                        \(individualId), \(type)::int2, 'epoch'::timestamptz + \(fromMs) * interval '1 millisecond',
                        'epoch'::timestamptz + \(toMs) * interval '1 millisecond') c
                    WHERE c.share > 0
                )
                SELECT zone.time_zone,
                       (extract(epoch FROM date_trunc('hour', s.start AT TIME ZONE zone.time_zone) AT TIME ZONE zone.time_zone) * 1000)::int8,
                       count(*)::int8, sum(s.val * s.share)::float8, min(s.val), max(s.val)
                FROM samples s, zone
                GROUP BY 1, 2 ORDER BY 2
                """
        case .day, .week:
            let unit = bucket == .day ? "day" : "week"
            query = """
                WITH zone AS (
                    SELECT time_zone,
                           ('epoch'::timestamptz + \(fromMs) * interval '1 millisecond') AT TIME ZONE time_zone AS local_from,
                           ('epoch'::timestamptz + \(toMs) * interval '1 millisecond') AT TIME ZONE time_zone AS local_to
                    FROM individuals WHERE id = \(individualId)
                )
                SELECT zone.time_zone,
                       (extract(epoch FROM date_trunc(\(unit), r.day::timestamp) AT TIME ZONE zone.time_zone) * 1000)::int8,
                       sum(r.sample_count)::int8, sum(r.value_sum)::float8, min(r.value_min), max(r.value_max)
                FROM daily_rollups r, zone
                WHERE r.individual_id = \(individualId) AND r.sample_type = \(type)
                  AND r.day >= zone.local_from::date AND r.day <= zone.local_to::date
                  AND r.day::timestamp >= zone.local_from AND r.day::timestamp < zone.local_to
                GROUP BY 1, 2 ORDER BY 2
                """
        }
        let rows = try await database.query(query)
        var timeZone = "UTC"
        let buckets = try rows.map { row in
            let (zone, start, count, sum, min, max) = try row.decode((String, Int64, Int64, Double, Float, Float).self)
            timeZone = zone
            return SummaryRow(bucketStartMs: start, count: Int(count), sum: sum, min: min, max: max)
        }
        if rows.isEmpty {
            let zone = try await database.query("SELECT time_zone FROM individuals WHERE id = \(individualId)")
            timeZone = try zone.first?.decode(String.self) ?? "UTC"
        }
        return (timeZone, buckets)
    }
}

extension SummaryQueries {
    /// The individual's readings of `type` starting in `[fromMs, toMs)` as summaries count them
    /// (one source per minute, migration 0029: a sample some preferred source covers is left
    /// out), oldest first, as (epoch milliseconds, value).
    package func countedReadings(individualId: Int64, type: Int16, fromMs: Int64, toMs: Int64) async throws -> [(timeMs: Int64, value: Float)] {
        let rows = try await database.query(
            """
            SELECT (extract(epoch FROM c.start) * 1000)::int8, c.val
            FROM data4help_counted_samples(
                \(individualId), \(type)::int2, 'epoch'::timestamptz + \(fromMs) * interval '1 millisecond',
                'epoch'::timestamptz + \(toMs) * interval '1 millisecond') c
            WHERE c.share > 0
            ORDER BY c.start
            """)
        return try rows.map { row in
            let (time, value) = try row.decode((Int64, Float).self)
            return (time, value)
        }
    }

    /// The bounds of the individual's glucose range: those of their most recently changed enabled
    /// watch rule on blood glucose with an `outside` condition, if they have one.
    package func glucoseRange(individualId: Int64, glucoseType: Int16) async throws -> (low: Float, high: Float)? {
        let rows = try await database.query(
            """
            SELECT low_value, high_value FROM watch_rules
            WHERE individual_id = \(individualId) AND sample_type = \(glucoseType) AND enabled AND comparison = 'outside'
            ORDER BY updated_at DESC, id DESC LIMIT 1
            """)
        return try rows.first.map { try $0.decode((Float, Float).self) }
    }
}
