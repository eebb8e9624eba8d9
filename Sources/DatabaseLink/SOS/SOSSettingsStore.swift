import Foundation
import Logging
import PostgresNIO

/// An individual's AutomatedSOS settings as stored; `contacts` is the JSON array as is.
package struct SOSSettingsRecord: Sendable, Equatable {
    package var enabled: Bool
    package var minHeartRate: Float
    package var maxHeartRate: Float?
    package var minOxygenSaturation: Float?
    package var consecutiveReadings: Int16
    package var cancelWindowSeconds: Int16
    package var contacts: String
    package var medicalNotes: String
    package var updatedAt: Date?
    /// The signing secret of each contact's webhook endpoint, by the contact's position.
    package var contactSecrets: [Int: String] = [:]

    package init(
        enabled: Bool, minHeartRate: Float, maxHeartRate: Float?, minOxygenSaturation: Float?, consecutiveReadings: Int16,
        cancelWindowSeconds: Int16, contacts: String, medicalNotes: String, updatedAt: Date? = nil
    ) {
        self.enabled = enabled
        self.minHeartRate = minHeartRate
        self.maxHeartRate = maxHeartRate
        self.minOxygenSaturation = minOxygenSaturation
        self.consecutiveReadings = consecutiveReadings
        self.cancelWindowSeconds = cancelWindowSeconds
        self.contacts = contacts
        self.medicalNotes = medicalNotes
        self.updatedAt = updatedAt
    }
}

/// `sos_settings`: one row per enrolled (or once enrolled) individual.
package struct SOSSettingsStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    package func settings(individualId: Int64) async throws -> SOSSettingsRecord? {
        try await database.withConnection { connection in
            try await Self.settings(individualId: individualId, on: connection, logger: database.logger)
        }
    }

    private static func settings(individualId: Int64, on connection: LeasedConnection, logger: Logger) async throws -> SOSSettingsRecord? {
        let rows = try await connection.query(
            """
            SELECT enabled, min_heart_rate, max_heart_rate, min_oxygen_saturation, consecutive_readings, cancel_window_seconds,
                   contacts::text, medical_notes, updated_at,
                   (SELECT array_agg(contact_position::int4 ORDER BY contact_position) FROM webhook_endpoints WHERE sos_contact_of = \(individualId)),
                   (SELECT array_agg(secret ORDER BY contact_position) FROM webhook_endpoints WHERE sos_contact_of = \(individualId))
            FROM sos_settings WHERE individual_id = \(individualId)
            """, logger: logger
        ).collect()
        return try rows.first.map(record)
    }

    /// A row of `settings`' columns as a record.
    private static func record(_ row: PostgresRow) throws -> SOSSettingsRecord {
        let r = try row.decode((Bool, Float, Float?, Float?, Int16, Int16, String, String, Date, [Int32]?, [String]?).self)
        var record = SOSSettingsRecord(
            enabled: r.0, minHeartRate: r.1, maxHeartRate: r.2, minOxygenSaturation: r.3, consecutiveReadings: r.4,
            cancelWindowSeconds: r.5, contacts: r.6, medicalNotes: r.7, updatedAt: r.8
        )
        for (position, secret) in zip(r.9 ?? [], r.10 ?? []) { record.contactSecrets[Int(position)] = secret }
        return record
    }

    /// Replaces the individual's settings; answers them as stored. Each contact with a webhook
    /// URL keeps (or gets) an endpoint of its own: the same URL at the same position keeps its
    /// secret, a new or changed one gets `newSecrets[position]`, a removed one is deleted.
    package func replace(
        individualId: Int64, with settings: SOSSettingsRecord, contactURLs: [Int: String], newSecrets: [Int: String]
    ) async throws -> SOSSettingsRecord {
        let positions = contactURLs.keys.sorted()
        let urls = positions.map { contactURLs[$0]! }, secrets = positions.map { newSecrets[$0] ?? "" }
        let positionValues = positions.map { Int16($0) }
        return try await database.withTransaction { connection in
            try await connection.query(
                """
                DELETE FROM webhook_endpoints e
                WHERE e.sos_contact_of = \(individualId)
                  AND NOT EXISTS (SELECT 1 FROM unnest(\(positionValues)::int2[], \(urls)::text[]) AS n(position, url)
                                  WHERE n.position = e.contact_position AND n.url = e.url)
                """, logger: database.logger)
            try await connection.query(
                """
                INSERT INTO webhook_endpoints (sos_contact_of, contact_position, url, secret)
                SELECT \(individualId), n.position, n.url, n.secret
                FROM unnest(\(positionValues)::int2[], \(urls)::text[], \(secrets)::text[]) AS n(position, url, secret)
                ON CONFLICT (sos_contact_of, contact_position) DO NOTHING
                """, logger: database.logger)
            try await Self.upsert(individualId: individualId, settings, on: connection, logger: database.logger)
            return try await Self.settings(individualId: individualId, on: connection, logger: database.logger) ?? settings
        }
    }

    /// Enrols the individual in AutomatedSOS with these thresholds, keeping the rest of their
    /// settings (contacts and their endpoints, notes, the other thresholds, the cancel window); a
    /// first enrolment takes `cancelWindowSeconds`. One statement, so a concurrent `replace` is
    /// never half-overwritten. Answers the settings as stored.
    package func enrol(
        individualId: Int64, minHeartRate: Float, consecutiveReadings: Int16, cancelWindowSeconds: Int16
    ) async throws
        -> SOSSettingsRecord
    {
        try await database.withConnection { connection in
            let rows = try await connection.query(
                """
                WITH stored AS (
                    INSERT INTO sos_settings (individual_id, enabled, min_heart_rate, consecutive_readings, cancel_window_seconds)
                    VALUES (\(individualId), true, \(minHeartRate), \(consecutiveReadings), \(cancelWindowSeconds))
                    ON CONFLICT (individual_id) DO UPDATE SET
                        enabled = true, min_heart_rate = EXCLUDED.min_heart_rate, consecutive_readings = EXCLUDED.consecutive_readings,
                        updated_at = now()
                    RETURNING *
                )
                SELECT enabled, min_heart_rate, max_heart_rate, min_oxygen_saturation, consecutive_readings, cancel_window_seconds,
                       contacts::text, medical_notes, updated_at,
                       (SELECT array_agg(contact_position::int4 ORDER BY contact_position) FROM webhook_endpoints WHERE sos_contact_of = \(individualId)),
                       (SELECT array_agg(secret ORDER BY contact_position) FROM webhook_endpoints WHERE sos_contact_of = \(individualId))
                FROM stored
                """, logger: database.logger
            ).collect()
            return try Self.record(rows[0])  // an upsert's RETURNING: always one row
        }
    }

    private static func upsert(individualId: Int64, _ settings: SOSSettingsRecord, on connection: LeasedConnection, logger: Logger) async throws {
        try await connection.query(
            """
            INSERT INTO sos_settings (individual_id, enabled, min_heart_rate, max_heart_rate, min_oxygen_saturation,
                                      consecutive_readings, cancel_window_seconds, contacts, medical_notes)
            VALUES (\(individualId), \(settings.enabled), \(settings.minHeartRate), \(settings.maxHeartRate), \(settings.minOxygenSaturation),
                    \(settings.consecutiveReadings), \(settings.cancelWindowSeconds), \(settings.contacts)::jsonb, \(settings.medicalNotes))
            ON CONFLICT (individual_id) DO UPDATE SET
                enabled = EXCLUDED.enabled, min_heart_rate = EXCLUDED.min_heart_rate, max_heart_rate = EXCLUDED.max_heart_rate,
                min_oxygen_saturation = EXCLUDED.min_oxygen_saturation, consecutive_readings = EXCLUDED.consecutive_readings,
                cancel_window_seconds = EXCLUDED.cancel_window_seconds, contacts = EXCLUDED.contacts,
                medical_notes = EXCLUDED.medical_notes, updated_at = now()
            """, logger: logger)
    }
}
