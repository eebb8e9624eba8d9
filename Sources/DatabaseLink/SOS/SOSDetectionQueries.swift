import Data4HelpCore
import Foundation
import PostgresNIO

/// An enrolled individual's AutomatedSOS thresholds (`sos_settings`, enabled).
package struct SOSThresholds: Sendable, Equatable {
    package let minHeartRate: Float
    package let maxHeartRate: Float?
    package let minOxygenSaturation: Float?
    /// N: how many abnormal readings in a row make an emergency (1…10).
    package let consecutiveReadings: Int
    package let cancelWindowSeconds: Int

    package init(minHeartRate: Float, maxHeartRate: Float?, minOxygenSaturation: Float?, consecutiveReadings: Int, cancelWindowSeconds: Int) {
        self.minHeartRate = minHeartRate
        self.maxHeartRate = maxHeartRate
        self.minOxygenSaturation = minOxygenSaturation
        self.consecutiveReadings = consecutiveReadings
        self.cancelWindowSeconds = cancelWindowSeconds
    }

    /// These thresholds with the stored readings around an upload's new ones.
    package func with(readings: [StoredReading]) -> MonitoredReadings {
        MonitoredReadings(thresholds: self, readings: readings)
    }
}

/// An enrolled individual's thresholds and the stored readings of one monitored type around
/// the new ones, oldest first, as detection needs them.
package struct MonitoredReadings: Sendable {
    package let thresholds: SOSThresholds
    /// Sorted by time, then de-duplication key (the order the samples are stored in).
    package let readings: [StoredReading]

    package init(thresholds: SOSThresholds, readings: [StoredReading]) {
        self.thresholds = thresholds
        self.readings = readings
    }

    package init(
        minHeartRate: Float, maxHeartRate: Float?, minOxygenSaturation: Float?, consecutiveReadings: Int, cancelWindowSeconds: Int,
        readings: [StoredReading]
    ) {
        self.init(
            thresholds: SOSThresholds(
                minHeartRate: minHeartRate, maxHeartRate: maxHeartRate, minOxygenSaturation: minOxygenSaturation,
                consecutiveReadings: consecutiveReadings, cancelWindowSeconds: cancelWindowSeconds),
            readings: readings)
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
