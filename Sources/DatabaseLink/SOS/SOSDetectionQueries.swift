import Data4HelpCore
import Foundation
import PostgresNIO

/// An enrolled individual's thresholds and the stored readings of one monitored type around
/// the new ones, oldest first, as detection needs them.
package struct MonitoredReadings: Sendable {
    package let minHeartRate: Float
    package let maxHeartRate: Float?
    package let minOxygenSaturation: Float?
    package let consecutiveReadings: Int
    package let cancelWindowSeconds: Int
    /// Sorted by time, then de-duplication key (the order the samples are stored in).
    package let readings: [StoredReading]

    package init(
        minHeartRate: Float, maxHeartRate: Float?, minOxygenSaturation: Float?, consecutiveReadings: Int, cancelWindowSeconds: Int,
        readings: [StoredReading]
    ) {
        self.minHeartRate = minHeartRate
        self.maxHeartRate = maxHeartRate
        self.minOxygenSaturation = minOxygenSaturation
        self.consecutiveReadings = consecutiveReadings
        self.cancelWindowSeconds = cancelWindowSeconds
        self.readings = readings
    }
}

/// The run of abnormal readings an incident is opened for.
package struct AbnormalRun: Sendable, Equatable {
    package let typeCode: Int16
    /// Oldest first.
    package let readings: [StoredReading]

    package init(typeCode: Int16, readings: [StoredReading]) {
        self.typeCode = typeCode
        self.readings = readings
    }
}

/// The queries AutomatedSOS detection runs inside an ingest transaction.
package enum SOSDetectionQueries {
    /// The settings and the readings of type `typeCode` from `fromMs` to `toMs`, with the
    /// individual's consecutive-readings count N of readings either side (oldest first); nil
    /// when the individual is not enrolled. Runs at every such upload of an enrolled
    /// individual, so it is a prepared statement (planning it over the partitions cost more
    /// than running it).
    package static func readings(
        typeCode: Int16, fromMs: Int64, toMs: Int64, in transaction: IngestTransaction
    ) async throws -> MonitoredReadings? {
        let statement = MonitoredReadingsStatement(individualId: transaction.individualId, typeCode: typeCode, fromMs: fromMs, toMs: toMs)
        var settings: (Float, Float?, Float?, Int16, Int16)?
        var readings: [StoredReading] = []
        for (minimum, maximum, oxygen, consecutive, window, time, value, key) in try await transaction.connection.execute(
            statement, logger: transaction.logger
        ) {
            settings = (minimum, maximum, oxygen, consecutive, window)
            if let time, let value, let key { readings.append(StoredReading(typeCode: typeCode, timeMs: time, value: value, key: key)) }
        }
        guard let settings else { return nil }
        return MonitoredReadings(
            minHeartRate: settings.0, maxHeartRate: settings.1, minOxygenSaturation: settings.2,
            consecutiveReadings: Int(settings.3), cancelWindowSeconds: Int(settings.4), readings: readings
        )
    }

    /// Opens an incident for `run` unless an incident already covers it (then that incident's
    /// run grows to include it: one run of abnormal readings opens one incident, whether it was
    /// cancelled or dispatched since) or another incident of the individual is still open (the
    /// partial unique index decides, whichever instance gets there first). The incident carries
    /// the newest location fix — stale when older than `locationStaleAfter` (the SOS Manager's
    /// rule) — and the home area; the individual's device endpoint gets the message `notice`
    /// makes of it, in the same transaction. Answers the new incident, or nil.
    package static func open(
        _ run: AbnormalRun, cancelWindowSeconds: Int, locationStaleAfter: Duration, in transaction: IngestTransaction,
        notice: (OpenedIncident) throws -> OutboxMessage
    ) async throws -> OpenedIncident? {
        guard let first = run.readings.first?.timeMs, let last = run.readings.last?.timeMs else { return nil }
        let readings = String(
            decoding: try JSONEncoder().encode(run.readings.map { StoredIncidentReading(timeMs: $0.timeMs, value: $0.value) }), as: UTF8.self)
        let individualId = transaction.individualId
        let window = Int32(cancelWindowSeconds)
        let rows = try await transaction.connection.query(
            """
            WITH covering AS (   -- index: sos_incidents_individual_idx
                UPDATE sos_incidents
                SET run_first_ms = least(run_first_ms, \(first)), run_last_ms = greatest(run_last_ms, \(last))
                WHERE individual_id = \(individualId) AND sample_type = \(run.typeCode)
                  AND run_first_ms <= \(last) AND run_last_ms >= \(first)
                RETURNING id
            ),
            fix AS (   -- the newest fix: index is the primary key of location_fixes
                SELECT latitude, longitude, accuracy, recorded_at FROM location_fixes
                WHERE individual_id = \(individualId) ORDER BY recorded_at DESC LIMIT 1
            ),
            opened AS (
                INSERT INTO sos_incidents (individual_id, sample_type, readings, run_first_ms, run_last_ms, received_at,
                                           dispatch_due_at, next_attempt_at, latitude, longitude, accuracy, located_at,
                                           location_stale, home_area)
                SELECT \(individualId), \(run.typeCode), \(readings)::jsonb, \(first), \(last), \(transaction.receivedAt),
                       clock_timestamp() + \(window) * interval '1 second', clock_timestamp() + \(window) * interval '1 second',
                       fix.latitude, fix.longitude, fix.accuracy, fix.recorded_at,
                       fix.recorded_at IS NULL OR fix.recorded_at < clock_timestamp() - \(locationStaleAfter.wholeMilliseconds) * interval '1 millisecond',
                       p.home_area
                FROM individuals p LEFT JOIN fix ON true
                WHERE p.id = \(individualId) AND NOT EXISTS (SELECT 1 FROM covering)
                ON CONFLICT (individual_id) WHERE status IN ('detected', 'dispatched', 'acknowledged') DO NOTHING
                RETURNING public_id, detected_at, dispatch_due_at
            )
            SELECT public_id, detected_at, dispatch_due_at FROM opened
            """, logger: transaction.logger)
        guard let row = try await rows.collect().first else { return nil }
        let (id, detectedAt, dispatchDueAt) = try row.decode((UUID, Date, Date).self)
        let incident = OpenedIncident(publicId: id, detectedAt: detectedAt, dispatchDueAt: dispatchDueAt)
        try await WebhookOutbox.enqueue(
            try notice(incident), to: .endpoint(of: .individual(individualId)), on: transaction.connection, logger: transaction.logger
        )
        return incident
    }
}

/// The blocks around the new readings — N blocks before the first one's minute (each stored
/// block holds at least one reading, so they hold at least N readings), the minutes in between,
/// N blocks after — cut down to the readings detection needs: N before `fromMs`, all from
/// `fromMs` to `toMs`, N after. Index: `sample_blocks_individual_time_idx` in both directions;
/// the day bounds let PostgreSQL skip other months' partitions.
struct MonitoredReadingsStatement: PostgresPreparedStatement {
    static let name = "data4help_sos_monitored_readings"
    static let sql = """
        WITH s AS (
            SELECT min_heart_rate, max_heart_rate, min_oxygen_saturation, consecutive_readings, cancel_window_seconds
            FROM sos_settings WHERE individual_id = $1 AND enabled
        ),
        b AS (
            (SELECT block_start, offsets_ms, vals, keys FROM sample_blocks
             WHERE individual_id = $1 AND sample_type = $2 AND EXISTS (SELECT 1 FROM s)
               AND block_start < $3 AND block_start >= $3::timestamptz - interval '1 day'
             ORDER BY block_start DESC LIMIT (SELECT consecutive_readings FROM s))
            UNION ALL
            (SELECT block_start, offsets_ms, vals, keys FROM sample_blocks
             WHERE individual_id = $1 AND sample_type = $2 AND EXISTS (SELECT 1 FROM s)
               AND block_start BETWEEN $3 AND $4)
            UNION ALL
            (SELECT block_start, offsets_ms, vals, keys FROM sample_blocks
             WHERE individual_id = $1 AND sample_type = $2 AND EXISTS (SELECT 1 FROM s)
               AND block_start > $4 AND block_start <= $4::timestamptz + interval '1 day'
             ORDER BY block_start LIMIT (SELECT consecutive_readings FROM s))
        ),
        r AS MATERIALIZED (
            SELECT (extract(epoch FROM b.block_start) * 1000)::int8 + e.offset_ms AS time_ms, e.val, e.key
            FROM b CROSS JOIN LATERAL unnest(b.offsets_ms, b.vals, b.keys) AS e(offset_ms, val, key)
        ),
        picked AS (
            (SELECT * FROM r WHERE time_ms < $5 ORDER BY time_ms DESC, key DESC LIMIT (SELECT consecutive_readings FROM s))
            UNION ALL
            (SELECT * FROM r WHERE time_ms BETWEEN $5 AND $6)
            UNION ALL
            (SELECT * FROM r WHERE time_ms > $6 ORDER BY time_ms, key LIMIT (SELECT consecutive_readings FROM s))
        )
        SELECT s.min_heart_rate, s.max_heart_rate, s.min_oxygen_saturation, s.consecutive_readings, s.cancel_window_seconds,
               p.time_ms, p.val, p.key
        FROM s LEFT JOIN picked p ON true
        ORDER BY p.time_ms, p.key
        """

    typealias Row = (Float, Float?, Float?, Int16, Int16, Int64?, Float?, Int64?)

    let individualId: Int64
    let typeCode: Int16
    let fromMs: Int64
    let toMs: Int64

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 6)
        bindings.append(individualId)
        bindings.append(typeCode)
        bindings.append(Date(timeIntervalSince1970: Double(fromMs / 60_000 * 60)))
        bindings.append(Date(timeIntervalSince1970: Double(toMs / 60_000 * 60)))
        bindings.append(fromMs)
        bindings.append(toMs)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
    }
}

/// An incident just opened, as its individual's device is told of it.
package struct OpenedIncident: Sendable {
    package let publicId: UUID
    package let detectedAt: Date
    package let dispatchDueAt: Date
}

/// One reading of an incident's run, as `sos_incidents.readings` keeps it.
private struct StoredIncidentReading: Encodable {
    let timeMs: Int64
    let value: Float
}
