import Data4HelpCore
import Foundation
import PostgresNIO

/// An incident as stored, for its individual and for the dispatch centre.
package struct SOSIncidentRecord: Sendable {
    package var id: Int64
    package var publicId: UUID
    package var status: SOSIncidentStatus
    package var sampleType: Int16
    /// `[{ "timeMs", "value" }]`, oldest first.
    package var readings: String
    package var receivedAt: Date
    package var detectedAt: Date
    package var dispatchDueAt: Date
    package var cancelledAt: Date?
    package var dispatchedAt: Date?
    package var acknowledgedAt: Date?
    package var resolvedAt: Date?
    package var dispatchReference: String?
    package var latitude: Double?
    package var longitude: Double?
    package var accuracy: Float?
    package var locatedAt: Date?
    package var locationStale: Bool
    package var homeArea: String
    package var dispatchAttempts: Int
    package var lastError: String?

    /// The select list, a constant spliced into the queries below (alias `i`).
    static let columns = """
        i.id, i.public_id, i.status, i.sample_type, i.readings::text, i.received_at, i.detected_at, i.dispatch_due_at,
        i.cancelled_at, i.dispatched_at, i.acknowledged_at, i.resolved_at, i.dispatch_reference, i.latitude, i.longitude,
        i.accuracy, i.located_at, i.location_stale, i.home_area, i.dispatch_attempts, i.last_error
        """

    init(row: PostgresRow) throws {
        let cells = row.makeRandomAccess()
        func cell<T: PostgresDecodable>(_ index: Int, as type: T.Type = T.self) throws -> T { try cells[index].decode(T.self) }
        id = try cell(0); publicId = try cell(1); status = try cell(2); sampleType = try cell(3); readings = try cell(4)
        receivedAt = try cell(5); detectedAt = try cell(6); dispatchDueAt = try cell(7); cancelledAt = try cell(8)
        dispatchedAt = try cell(9); acknowledgedAt = try cell(10); resolvedAt = try cell(11); dispatchReference = try cell(12)
        latitude = try cell(13); longitude = try cell(14); accuracy = try cell(15); locatedAt = try cell(16)
        locationStale = try cell(17); homeArea = try cell(18); dispatchAttempts = Int(try cell(19, as: Int32.self)); lastError = try cell(20)
    }
}

/// A due incident claimed for one dispatch attempt, with what the ambulance needs to know.
package struct ClaimedIncident: Sendable {
    package var incident: SOSIncidentRecord
    package var fullName: String
    package var birthDate: Date
    package var sex: String
    package var medicalNotes: String
    /// The contacts as stored in the settings (JSON array).
    package var contacts: String
}

/// How a dispatch attempt ended.
package enum DispatchOutcome: Sendable {
    case accepted(reference: String?)
    case retry(at: Date, error: String)
}

/// `sos_incidents`: the life cycle after detection (dispatch outbox, cancellation, the dispatch
/// centre's reports) and the individual's list.
package struct SOSIncidentStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    // MARK: Dispatching

    /// Claims up to `limit` due incidents for one attempt each, leased for `lease` (an instance
    /// that dies mid-attempt leaves them to be claimed again when it runs out; the dispatch
    /// centre de-duplicates the repeat by the incident id). `SKIP LOCKED` lets every instance
    /// claim side by side, never the same incident at once. On an incident's first attempt its
    /// emergency contacts' webhook endpoints get the message `contactsNotice` makes of it (in the
    /// claim's transaction), in parallel with the call.
    package func claimDue(
        limit: Int, lease: Duration, contactsNotice: (ClaimedIncident) throws -> OutboxMessage
    ) async throws -> [ClaimedIncident] {
        try await database.withTransaction { connection in
            let rows = try await connection.query(
                """
                WITH due AS (   -- index: sos_incidents_due_idx
                    SELECT id FROM sos_incidents
                    WHERE status = 'detected' AND next_attempt_at <= clock_timestamp()
                    ORDER BY next_attempt_at LIMIT \(limit)
                    FOR UPDATE SKIP LOCKED
                ),
                claimed AS (
                    UPDATE sos_incidents i
                    SET dispatch_attempts = i.dispatch_attempts + 1,
                        next_attempt_at = clock_timestamp() + \(lease.wholeMilliseconds) * interval '1 millisecond'
                    FROM due WHERE i.id = due.id
                    RETURNING i.*
                )
                SELECT \(unescaped: SOSIncidentRecord.columns), p.full_name, p.birth_date, p.sex, COALESCE(s.medical_notes, ''),
                       COALESCE(s.contacts, '[]')::text, i.individual_id
                FROM claimed i JOIN individuals p ON p.id = i.individual_id LEFT JOIN sos_settings s ON s.individual_id = i.individual_id
                """, logger: database.logger
            ).collect()
            var claimed: [ClaimedIncident] = []
            for row in rows {
                let cells = row.makeRandomAccess()
                let incident = ClaimedIncident(
                    incident: try SOSIncidentRecord(row: row), fullName: try cells[21].decode(String.self),
                    birthDate: try cells[22].decode(Date.self), sex: try cells[23].decode(String.self),
                    medicalNotes: try cells[24].decode(String.self), contacts: try cells[25].decode(String.self)
                )
                if incident.incident.dispatchAttempts == 1 {
                    try await WebhookOutbox.enqueue(
                        try contactsNotice(incident), to: .sosContacts(ofIndividual: try cells[26].decode(Int64.self)),
                        on: connection, logger: database.logger
                    )
                }
                claimed.append(incident)
            }
            return claimed
        }
    }

    /// Records how the claimed attempt went. Ignored when the attempt's lease ran out and a later
    /// claim has taken over, or when the incident moved on meanwhile (acknowledged already).
    package func finishAttempt(_ claimed: ClaimedIncident, outcome: DispatchOutcome) async throws {
        let id = claimed.incident.id, attempt = Int32(claimed.incident.dispatchAttempts)
        switch outcome {
        case .accepted(let reference):
            try await database.query(
                """
                UPDATE sos_incidents
                SET status = 'dispatched', dispatched_at = COALESCE(dispatched_at, clock_timestamp()),
                    dispatch_reference = COALESCE(\(reference), dispatch_reference), last_error = NULL
                WHERE id = \(id) AND dispatch_attempts = \(attempt) AND status = 'detected'
                """)
        case .retry(let at, let error):
            try await database.query(
                """
                UPDATE sos_incidents
                SET next_attempt_at = 'epoch'::timestamptz + \(at.epochMilliseconds) * interval '1 millisecond', last_error = \(error)
                WHERE id = \(id) AND dispatch_attempts = \(attempt) AND status = 'detected'
                """)
        }
    }

    /// When the next incident falls due (or its lease runs out); nil when none waits.
    package func nextDue() async throws -> Date? {
        try await database.query("SELECT min(next_attempt_at) FROM sos_incidents WHERE status = 'detected'")  // index: sos_incidents_due_idx
            .first?.decode(Date?.self) ?? nil
    }

    // MARK: The individual

    /// "It's not an emergency": stops the dispatch when no attempt has started, otherwise only
    /// records the cancellation (the ambulance is not recalled). The claim locks the row, so a
    /// cancellation and a dispatch never both win. Nil when the incident is not the individual's.
    package func cancel(publicId: UUID, individualId: Int64) async throws -> SOSIncidentRecord? {
        try await database.query(
            """
            UPDATE sos_incidents i
            SET status = CASE WHEN i.status = 'detected' AND i.dispatch_attempts = 0 THEN 'cancelled' ELSE i.status END,
                cancelled_at = COALESCE(i.cancelled_at, clock_timestamp())
            WHERE i.public_id = \(publicId) AND i.individual_id = \(individualId)
            RETURNING \(unescaped: SOSIncidentRecord.columns)
            """
        ).first.map(SOSIncidentRecord.init(row:))
    }

    package func incident(publicId: UUID, individualId: Int64) async throws -> SOSIncidentRecord? {
        try await database.query(
            """
            SELECT \(unescaped: SOSIncidentRecord.columns) FROM sos_incidents i WHERE i.public_id = \(publicId) AND i.individual_id = \(individualId)
            """
        ).first.map(SOSIncidentRecord.init(row:))
    }

    /// The individual's incidents, newest first (index: sos_incidents_individual_idx).
    package func incidents(individualId: Int64, beforeId: Int64?, limit: Int) async throws -> [SOSIncidentRecord] {
        try await database.query(
            """
            SELECT \(unescaped: SOSIncidentRecord.columns) FROM sos_incidents i
            WHERE i.individual_id = \(individualId) AND (\(beforeId)::int8 IS NULL OR i.id < \(beforeId))
            ORDER BY i.id DESC LIMIT \(limit)
            """
        ).map(SOSIncidentRecord.init(row:))
    }

    // MARK: The dispatch centre

    /// Records an acknowledgement or resolution (the first time of each counts). A report may
    /// overtake the recording of the accepted attempt, so a detected incident with an attempt
    /// under way counts as dispatched. Nil when no such incident; `.conflict` when it was
    /// cancelled before any call went out.
    package func record(_ report: DispatchCentreReport, publicId: UUID, reference: String?) async throws -> Result<SOSIncidentRecord, ReportRefusal>?
    {
        try await database.withTransaction { connection in
            let current = try await connection.query(
                """
                SELECT status, dispatch_attempts FROM sos_incidents WHERE public_id = \(publicId) FOR UPDATE
                """, logger: database.logger
            ).collect()
            guard let row = current.first else { return nil }
            let (status, attempts) = try row.decode((SOSIncidentStatus, Int32).self)
            if status == .cancelled || (status == .detected && attempts == 0) { return .failure(.notDispatched) }
            if status == .resolved && report == .acknowledged { return .failure(.alreadyResolved) }
            let updated = try await connection.query(
                """
                UPDATE sos_incidents i
                SET status = CASE WHEN \(report.rawValue) = 'resolved' THEN 'resolved' ELSE 'acknowledged' END,
                    dispatched_at = COALESCE(i.dispatched_at, clock_timestamp()),
                    acknowledged_at = COALESCE(i.acknowledged_at, clock_timestamp()),
                    resolved_at = CASE WHEN \(report.rawValue) = 'resolved' THEN COALESCE(i.resolved_at, clock_timestamp()) END,
                    dispatch_reference = COALESCE(\(reference), i.dispatch_reference)
                WHERE i.public_id = \(publicId)
                RETURNING \(unescaped: SOSIncidentRecord.columns)
                """, logger: database.logger
            ).collect()
            return .success(try SOSIncidentRecord(row: updated[0]))
        }
    }

    package enum ReportRefusal: Error, Sendable {
        case notDispatched, alreadyResolved
    }

    /// Notes a report signature's digest; false when it was seen before (a replay). Digests older
    /// than 15 minutes (three times the signature's tolerance) are purged in the same statement
    /// (index: dispatch_report_signatures_seen_idx).
    package func firstUse(ofReportSignature digest: String) async throws -> Bool {
        let rows = try await database.query(
            """
            WITH purged AS (DELETE FROM dispatch_report_signatures WHERE seen_at < now() - interval '15 minutes')
            INSERT INTO dispatch_report_signatures (digest) VALUES (\(digest)) ON CONFLICT (digest) DO NOTHING RETURNING 1
            """)
        return !rows.isEmpty
    }
}
