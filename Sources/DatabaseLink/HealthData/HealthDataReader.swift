import Data4HelpCore
import Foundation
import PostgresNIO

/// One stored sample as read back.
package struct SampleRow: Sendable, Equatable {
    package var type: Int16
    /// Start, in milliseconds since the epoch.
    package var startMs: Int64
    package var value: Float
    package var durationMs: Int32?
    package var key: Int64
    /// The device that produced it, when the upload named one.
    package var source: String?
}

/// One stored location fix as read back.
package struct LocationRow: Sendable, Equatable {
    /// Milliseconds since the epoch.
    package var timeMs: Int64
    package var key: Int64
    package var latitude: Double
    package var longitude: Double
    package var accuracy: Float?
    package var altitude: Float?
}

/// Reads of the Data Manager's tables; every query is scoped to one individual.
///
/// Times cross into SQL as integer milliseconds since the epoch and are turned into timestamps
/// there (`'epoch' + n ms`), exactly: a fractional `Date` bound directly would be truncated to the
/// microsecond below, and a cursor could then land a hair before the row it names.
package struct HealthDataReader: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    /// Up to `limit` samples with start in `[fromMs, toMs)`, strictly after `position` in
    /// (start, type, key) order — or strictly before it when `descending`. Keyset pagination:
    /// stable under concurrent inserts, no OFFSET over samples.
    ///
    /// Blocks are unnested only as far as needed. Every block that starts in a later minute than
    /// the position holds only qualifying samples, at least one — and so does every block that
    /// starts in an earlier minute (descending), except an hour block holding the position; so the
    /// blocks up to the `limit`-th such block surely hold the page (an hour block never shares its
    /// hour with another block: migration 0032). The window starts at the hour block that may
    /// hold the first qualifying sample. Index: the primary key for one type,
    /// sample_blocks_individual_time_idx for several.
    package func samples(
        individualId: Int64, types: [Int16], fromMs: Int64?, toMs: Int64?, descending: Bool, limit: Int, after position: SamplePosition?
    ) async throws -> [SampleRow] {
        // Every bound is clamped to the stored range first, so no arithmetic below can overflow
        // whatever a caller passes.
        var lowerMs = Self.clamped(fromMs ?? Self.earliestMs), upperMs = Self.clamped(toMs ?? Self.latestMs)
        let position = position.map { SamplePosition(startMs: Self.clamped($0.startMs), type: $0.type, key: $0.key) }
        if let position {
            if descending { upperMs = min(upperMs, position.startMs + 1) } else { lowerMs = max(lowerMs, position.startMs) }
        }
        let cursor =
            position
            ?? (descending
                ? SamplePosition(startMs: Self.latestMs, type: .max, key: .max)
                : SamplePosition(startMs: Self.earliestMs - 1, type: .min, key: .min))
        guard descending else {
            return try await page(
                individualId: individualId, types: types, lowerMs: lowerMs, upperMs: upperMs, descending: false, limit: limit, cursor: cursor)
        }
        // Newest first, month windows back from the newest: the statement's partitions are pruned
        // to the window's at executor start, so a page of recent data initialises one or two
        // monthly partitions instead of all of them (with three years of partitions: 7.2 k → 11 k
        // statements/s, pgbench). Windows grow ×4 (1, 4, 16 months, then the rest), so sparse
        // history costs a few statements, not one a month.
        var rows: [SampleRow] = []
        var end = upperMs, months = 1
        while rows.count < limit, end > lowerMs {
            let start = months > 16 ? lowerMs : max(lowerMs, Self.monthStart(of: end - 1, monthsBack: months - 1))
            rows += try await page(
                individualId: individualId, types: types, lowerMs: start, upperMs: end, descending: true, limit: limit - rows.count, cursor: cursor)
            end = start
            months *= 4
        }
        return rows
    }

    /// One statement: up to `limit` samples in `[lowerMs, upperMs)` (none when it is empty: a
    /// cursor past `to`), beyond `cursor` in the listing's order.
    private func page(
        individualId: Int64, types: [Int16], lowerMs: Int64, upperMs: Int64, descending: Bool, limit: Int, cursor: SamplePosition
    ) async throws -> [SampleRow] {
        let bounds = SampleListingBounds(
            individualId: individualId, types: types, lowerMs: lowerMs, upperMs: upperMs, lowerMinuteMs: Self.floorMinute(lowerMs),
            upperMinuteMs: Self.floorMinute(upperMs - 1), limit: Int64(limit), cursor: cursor)
        let rows =
            try await database.withConnection { connection in
                descending
                    ? try await connection.execute(SampleListingStatement<LatestFirst>(bounds: bounds), logger: database.logger)
                    : try await connection.execute(SampleListingStatement<OldestFirst>(bounds: bounds), logger: database.logger)
            }
        return rows.map { type, startMs, value, duration, key, source in
            SampleRow(type: type, startMs: startMs, value: value, durationMs: duration, key: key, source: source)
        }
    }

    /// The start of the UTC month `monthsBack` months before the one holding `milliseconds`: the
    /// bounds of the monthly partitions (migration 0002).
    static func monthStart(of milliseconds: Int64, monthsBack: Int) -> Int64 {
        let days = Int(milliseconds >= 0 ? milliseconds / 86_400_000 : (milliseconds + 1) / 86_400_000 - 1)
        let day = CivilDate(daysSince1970: days)
        let months = day.year * 12 + (day.month - 1) - monthsBack
        let first = CivilDate(year: months >= 0 ? months / 12 : (months - 11) / 12, month: (months % 12 + 12) % 12 + 1, day: 1)
        return Int64(first.daysSince1970) * 86_400_000
    }

    /// Every reading of one type whose time falls in one of `windows` (`[start, end)` in
    /// milliseconds, sorted and not overlapping), in time order, in one statement: a year of
    /// nights at once. Every source's readings (no listing position, no source names). Index: the
    /// primary key, one range per window and one probe for the block across its start (`OFFSET 0`
    /// keeps the subquery per window: flattened into a join, a fresh table's estimates made
    /// PostgreSQL read every block of the person once and compare each with all 365 windows,
    /// 9.6 million comparisons and 1.7 s for a year of nights).
    package func readings(individualId: Int64, type: Int16, windows: [(startMs: Int64, endMs: Int64)]) async throws -> [(timeMs: Int64, value: Float)]
    {
        guard !windows.isEmpty else { return [] }
        let starts = windows.map { Self.clamped($0.startMs) }, ends = windows.map { Self.clamped($0.endMs) }
        let rows = try await database.query(
            """
            SELECT r.t, r.val FROM unnest(\(starts)::int8[], \(ends)::int8[]) AS w(s, e)
            CROSS JOIN LATERAL (
                SELECT (extract(epoch FROM b.block_start) * 1000)::int8 + data4help_offset(u.offset_ms, u.offset_s) AS t, u.val
                FROM (
                    SELECT * FROM sample_blocks b
                    WHERE b.individual_id = \(individualId) AND b.sample_type = \(type)
                      AND b.block_start >= 'epoch'::timestamptz + w.s * interval '1 millisecond'
                      AND b.block_start < 'epoch'::timestamptz + w.e * interval '1 millisecond'
                    UNION ALL
                    SELECT * FROM data4help_blocks_across(\(individualId), ARRAY[\(type)]::int2[], 'epoch'::timestamptz + w.s * interval '1 millisecond')
                ) b
                CROSS JOIN LATERAL unnest(b.offsets_ms, b.offsets_s, b.vals) AS u(offset_ms, offset_s, val)
                OFFSET 0
            ) r
            WHERE r.t >= w.s AND r.t < w.e
            ORDER BY r.t
            """)
        return try rows.map { try $0.decode((Int64, Float).self) }.map { (timeMs: $0.0, value: $0.1) }
    }

    /// Up to `limit` location fixes with time in `[fromMs, toMs)` after (or, descending, before)
    /// a position (index: the primary key, individual_id, recorded_at, dedupe_key).
    package func locations(
        individualId: Int64, fromMs: Int64?, toMs: Int64?, descending: Bool, limit: Int, after position: (timeMs: Int64, key: Int64)?
    ) async throws -> [LocationRow] {
        let lowerMs = Self.clamped(fromMs ?? Self.earliestMs), upperMs = Self.clamped(toMs ?? Self.latestMs)
        let cursor: (timeMs: Int64, key: Int64) =
            position.map { (Self.clamped($0.timeMs), $0.key) }
            ?? (descending ? (Self.latestMs, .max) : (Self.earliestMs - 1, .min))
        let (after, direction) = descending ? ("<", "DESC") : (">", "ASC")
        let query: PostgresQuery = """
            SELECT (extract(epoch FROM recorded_at) * 1000)::int8, dedupe_key, latitude, longitude, accuracy, altitude
            FROM location_fixes
            WHERE individual_id = \(individualId)
              AND recorded_at >= 'epoch'::timestamptz + \(lowerMs) * interval '1 millisecond'
              AND recorded_at < 'epoch'::timestamptz + \(upperMs) * interval '1 millisecond'
              AND (recorded_at, dedupe_key) \(unescaped: after) ('epoch'::timestamptz + \(cursor.timeMs) * interval '1 millisecond', \(cursor.key))
            ORDER BY recorded_at \(unescaped: direction), dedupe_key \(unescaped: direction) LIMIT \(limit)
            """
        let rows = try await database.query(query)
        return try rows.map { row in
            let (timeMs, key, latitude, longitude, accuracy, altitude) = try row.decode((Int64, Int64, Double, Double, Float?, Float?).self)
            return LocationRow(timeMs: timeMs, key: key, latitude: latitude, longitude: longitude, accuracy: accuracy, altitude: altitude)
        }
    }

    /// Bounds wide enough for any stored time (1970 to 2200), in epoch milliseconds.
    static let earliestMs: Int64 = 0
    static let latestMs: Int64 = 7_258_118_400_000

    /// A time in milliseconds moved into [earliestMs - 1, latestMs]: outside it nothing is stored.
    static func clamped(_ milliseconds: Int64) -> Int64 {
        min(max(milliseconds, earliestMs - 1), latestMs)
    }

    private static func floorMinute(_ milliseconds: Int64) -> Int64 {
        milliseconds - ((milliseconds % 60_000) + 60_000) % 60_000
    }

    /// The UTC 8-hour window a time is in (00:00, 08:00 or 16:00): where the longest block that
    /// may hold it starts (migration 0050).
    package static func floorWindow(_ milliseconds: Int64) -> Int64 {
        milliseconds - ((milliseconds % 28_800_000) + 28_800_000) % 28_800_000
    }
}

/// The values of one page of a sample listing (see `HealthDataReader.samples`), bound to the
/// prepared statement of its order.
struct SampleListingBounds: Sendable {
    let individualId: Int64
    let types: [Int16]
    let lowerMs: Int64
    let upperMs: Int64
    let lowerMinuteMs: Int64
    let upperMinuteMs: Int64
    let limit: Int64
    let cursor: SamplePosition

    var bindings: PostgresBindings {
        var bindings = PostgresBindings(capacity: 10)
        bindings.append(individualId)
        bindings.append(types)
        bindings.append(lowerMinuteMs)
        bindings.append(upperMinuteMs)
        bindings.append(limit)
        bindings.append(lowerMs)
        bindings.append(upperMs)
        bindings.append(cursor.startMs)
        bindings.append(cursor.type)
        bindings.append(cursor.key)
        return bindings
    }

    typealias Row = (Int16, Int64, Float, Int32?, Int64, String?)
}

/// The order of a listing page, as a type: each order is its own prepared statement.
protocol SampleListingOrder {
    static var descending: Bool { get }
}

enum OldestFirst: SampleListingOrder { static let descending = false }
enum LatestFirst: SampleListingOrder { static let descending = true }

/// A page of samples in one order: a call of the listing's PL/pgSQL function. Migration 0044 holds
/// the statements and says why they are in a function (their plans stay generic whatever the
/// statistics, with the window's bounds as index conditions). Prepared, so that each connection
/// parses the call once.
struct SampleListingStatement<Order: SampleListingOrder>: PostgresPreparedStatement {
    static var name: String { Order.descending ? "data4help_samples_newest_first" : "data4help_samples_oldest_first" }
    static var sql: String {
        "SELECT * FROM data4help_samples_page(\(Order.descending), $1::int8, $2::int2[], $3::int8, $4::int8, $5::int8, $6::int8, "
            + "$7::int8, $8::int8, $9::int2, $10::int8)"
    }
    typealias Row = SampleListingBounds.Row
    let bounds: SampleListingBounds
    func makeBindings() throws -> PostgresBindings { bounds.bindings }
    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}
