import Data4HelpCore
import Foundation
import PostgresNIO

/// What the Anomaly Detection module must know about an individual before it reads any sample:
/// whether they are enrolled in AutomatedSOS, their enabled watch rules on the uploaded types,
/// and their time zone (rules' active hours).
package struct DetectionContext: Sendable {
    /// Nil when the individual is not enrolled (or has paused AutomatedSOS).
    package let sos: SOSThresholds?
    /// Oldest first.
    package let rules: [WatchRule]
    package let timeZone: String

    /// Nothing to evaluate: the upload costs the one lookup that found this out.
    package var isEmpty: Bool { sos == nil && rules.isEmpty }
}

/// The reads the Anomaly Detection module makes inside an ingest transaction (AutomatedSOS and
/// watch rules alike). Both run at every upload of a watched type, so both are prepared
/// statements: planning them over the partitions cost more than running them.
package enum AnomalyDetectionQueries {
    /// One statement for everything detection needs before reading samples.
    package static func context(typeCodes: [Int16], in transaction: IngestTransaction) async throws -> DetectionContext {
        var sos: SOSThresholds?
        var rules: [WatchRule] = []
        var zone = "UTC"
        for row in try await transaction.connection.execute(
            DetectionContextStatement(individualId: transaction.individualId, typeCodes: typeCodes), logger: transaction.logger
        ) {
            let cells = row.makeRandomAccess()
            zone = try cells[0].decode(String.self)
            if let minimum = try cells[1].decode(Float?.self) {
                sos = SOSThresholds(
                    minHeartRate: minimum, maxHeartRate: try cells[2].decode(Float?.self), minOxygenSaturation: try cells[3].decode(Float?.self),
                    consecutiveReadings: Int(try cells[4].decode(Int16.self)), cancelWindowSeconds: Int(try cells[5].decode(Int16.self)))
            }
            if try cells[6].decode(Int64?.self) != nil {
                rules.append(try WatchRuleStore.rule(row, from: 6))
            }
        }
        return DetectionContext(sos: sos, rules: rules, timeZone: zone)
    }

    /// The stored readings of one type from `fromMs` to `toMs`, and `extra` more on each side
    /// (within a day of them), oldest first, then by key (the order blocks keep them in).
    package static func readings(
        typeCode: Int16, fromMs: Int64, toMs: Int64, extra: Int, in transaction: IngestTransaction
    ) async throws -> [StoredReading] {
        let statement = ReadingsAroundStatement(
            individualId: transaction.individualId, typeCode: typeCode, fromMs: fromMs, toMs: toMs, extra: Int32(clamping: extra))
        var readings: [StoredReading] = []
        for (time, value, key) in try await transaction.connection.execute(statement, logger: transaction.logger) {
            readings.append(StoredReading(typeCode: typeCode, timeMs: time, value: value, key: key))
        }
        return readings
    }
}

/// The individual's time zone, AutomatedSOS thresholds (when enrolled) and enabled rules on the
/// types: one row per rule, or one row with no rule. Indexes: the primary key of `individuals`
/// and of `sos_settings`, `watch_rules_individual_idx`.
struct DetectionContextStatement: PostgresPreparedStatement {
    static let name = "data4help_detection_context"
    static let sql = """
        SELECT i.time_zone, s.min_heart_rate, s.max_heart_rate, s.min_oxygen_saturation, s.consecutive_readings, s.cancel_window_seconds,
               \(WatchRuleStore.columns)
        FROM individuals i
        LEFT JOIN sos_settings s ON s.individual_id = i.id AND s.enabled
        LEFT JOIN watch_rules r ON r.individual_id = i.id AND r.enabled AND r.sample_type = ANY ($2::int2[])
        WHERE i.id = $1
        ORDER BY r.id
        """

    typealias Row = PostgresRow

    let individualId: Int64
    let typeCodes: [Int16]

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(individualId)
        bindings.append(typeCodes)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
}

/// The blocks around the new readings — `extra` blocks before the first one's minute (each
/// stored block holds at least one reading, so they hold at least `extra` readings), the
/// minutes in between, `extra` blocks after — cut down to the readings asked for: `extra`
/// before `fromMs`, all from `fromMs` to `toMs`, `extra` after. Index:
/// `sample_blocks_individual_time_idx` in both directions; the day bounds let PostgreSQL skip
/// other months' partitions. An hour block (settled history, migration 0032) that holds the
/// first readings starts before their minute: it is the nearest block before, read with them.
struct ReadingsAroundStatement: PostgresPreparedStatement {
    static let name = "data4help_readings_around"
    static let sql = """
        WITH b AS (
            (SELECT block_start, offsets_ms, offsets_s, vals, keys, tags FROM sample_blocks
             WHERE individual_id = $1 AND sample_type = $2
               AND block_start < $3 AND block_start >= $3::timestamptz - interval '1 day'
             ORDER BY block_start DESC LIMIT $7)
            UNION ALL
            (SELECT block_start, offsets_ms, offsets_s, vals, keys, tags FROM sample_blocks
             WHERE individual_id = $1 AND sample_type = $2 AND block_start BETWEEN $3 AND $4)
            UNION ALL
            (SELECT block_start, offsets_ms, offsets_s, vals, keys, tags FROM sample_blocks
             WHERE individual_id = $1 AND sample_type = $2
               AND block_start > $4 AND block_start <= $4::timestamptz + interval '1 day'
             ORDER BY block_start LIMIT $7)
        ),
        r AS MATERIALIZED (
            SELECT (extract(epoch FROM b.block_start) * 1000)::int8 + data4help_offset(e.offset_ms, e.offset_s) AS time_ms, e.val,
                   COALESCE(e.key, data4help_settled_key(data4help_offset(e.offset_ms, e.offset_s), e.tag)) AS key
            FROM b CROSS JOIN LATERAL unnest(b.offsets_ms, b.offsets_s, b.vals, b.keys, b.tags) AS e(offset_ms, offset_s, val, key, tag)
        ),
        picked AS (
            (SELECT * FROM r WHERE time_ms < $5 ORDER BY time_ms DESC, key DESC LIMIT $7)
            UNION ALL
            (SELECT * FROM r WHERE time_ms BETWEEN $5 AND $6)
            UNION ALL
            (SELECT * FROM r WHERE time_ms > $6 ORDER BY time_ms, key LIMIT $7)
        )
        SELECT time_ms, val, key FROM picked ORDER BY time_ms, key
        """

    typealias Row = (Int64, Float, Int64)

    let individualId: Int64
    let typeCode: Int16
    let fromMs: Int64
    let toMs: Int64
    let extra: Int32

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 7)
        bindings.append(individualId)
        bindings.append(typeCode)
        bindings.append(Date(timeIntervalSince1970: Double(fromMs.flooredToMinute / 1000)))
        bindings.append(Date(timeIntervalSince1970: Double(toMs.flooredToMinute / 1000)))
        bindings.append(fromMs)
        bindings.append(toMs)
        bindings.append(extra)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
    }
}

extension Int64 {
    /// This epoch time in milliseconds, at the start of its minute (before 1970 too).
    fileprivate var flooredToMinute: Int64 {
        let (quotient, remainder) = quotientAndRemainder(dividingBy: 60_000)
        return (remainder < 0 ? quotient - 1 : quotient) * 60_000
    }
}
