import Foundation
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
        try await database.query("""
            SELECT enabled, min_heart_rate, max_heart_rate, min_oxygen_saturation, consecutive_readings, cancel_window_seconds,
                   contacts::text, medical_notes, updated_at
            FROM sos_settings WHERE individual_id = \(individualId)
            """).first.map { row in
            let r = try row.decode((Bool, Float, Float?, Float?, Int16, Int16, String, String, Date).self)
            return SOSSettingsRecord(
                enabled: r.0, minHeartRate: r.1, maxHeartRate: r.2, minOxygenSaturation: r.3, consecutiveReadings: r.4,
                cancelWindowSeconds: r.5, contacts: r.6, medicalNotes: r.7, updatedAt: r.8
            )
        }
    }

    /// Replaces the individual's settings; answers them as stored.
    package func replace(individualId: Int64, with settings: SOSSettingsRecord) async throws -> SOSSettingsRecord {
        try await database.query("""
            INSERT INTO sos_settings (individual_id, enabled, min_heart_rate, max_heart_rate, min_oxygen_saturation,
                                      consecutive_readings, cancel_window_seconds, contacts, medical_notes)
            VALUES (\(individualId), \(settings.enabled), \(settings.minHeartRate), \(settings.maxHeartRate), \(settings.minOxygenSaturation),
                    \(settings.consecutiveReadings), \(settings.cancelWindowSeconds), \(settings.contacts)::jsonb, \(settings.medicalNotes))
            ON CONFLICT (individual_id) DO UPDATE SET
                enabled = EXCLUDED.enabled, min_heart_rate = EXCLUDED.min_heart_rate, max_heart_rate = EXCLUDED.max_heart_rate,
                min_oxygen_saturation = EXCLUDED.min_oxygen_saturation, consecutive_readings = EXCLUDED.consecutive_readings,
                cancel_window_seconds = EXCLUDED.cancel_window_seconds, contacts = EXCLUDED.contacts,
                medical_notes = EXCLUDED.medical_notes, updated_at = now()
            """)
        return try await self.settings(individualId: individualId) ?? settings
    }
}
