import AccessManager
import Data4HelpCore
import DatabaseLink
import Foundation

/// Reads and replaces an individual's AutomatedSOS settings (enrolment is `enabled`).
package struct SOSSettingsService: Sendable {
    let store: SOSSettingsStore

    package init(database: Database) {
        self.store = SOSSettingsStore(database: database)
    }

    /// The settings, or the defaults (not enrolled) when never set.
    package func settings(of individual: IndividualID) async throws -> (settings: SOSSettings, updatedAt: Date?) {
        guard let record = try await store.settings(individualId: individual.rowId) else { return (SOSSettings(), nil) }
        return (try Self.settings(record), record.updatedAt)
    }

    package func replace(_ settings: SOSSettings, for individual: IndividualID) async throws -> (settings: SOSSettings, updatedAt: Date?) {
        let contacts = String(decoding: try JSONEncoder().encode(settings.contacts), as: UTF8.self)
        var urls: [Int: String] = [:], secrets: [Int: String] = [:]
        for (position, contact) in settings.contacts.enumerated() {
            guard let url = contact.webhookUrl else { continue }
            urls[position] = url
            secrets[position] = BearerSecret.newWebhookSecret()
        }
        let record = try await store.replace(
            individualId: individual.rowId,
            with: SOSSettingsRecord(
                enabled: settings.enabled, minHeartRate: Float(settings.minHeartRate), maxHeartRate: settings.maxHeartRate.map(Float.init),
                minOxygenSaturation: settings.minOxygenSaturation.map(Float.init), consecutiveReadings: Int16(settings.consecutiveReadings),
                cancelWindowSeconds: Int16(settings.cancelWindowSeconds), contacts: contacts, medicalNotes: settings.medicalNotes
            ), contactURLs: urls, newSecrets: secrets)
        return (try Self.settings(record), record.updatedAt)
    }

    /// Enrols the individual with the design's AutomatedSOS rule — `template`'s heart-rate
    /// minimum and consecutive readings — keeping their contacts, notes and other thresholds.
    package func enrol(_ individual: IndividualID, with template: SOSThresholds) async throws -> (settings: SOSSettings, updatedAt: Date?) {
        let record = try await store.enrol(
            individualId: individual.rowId, minHeartRate: template.minHeartRate, consecutiveReadings: Int16(clamping: template.consecutiveReadings),
            cancelWindowSeconds: Int16(clamping: template.cancelWindowSeconds))
        return (try Self.settings(record), record.updatedAt)
    }

    private static func settings(_ record: SOSSettingsRecord) throws -> SOSSettings {
        var contacts = try JSONDecoder().decode([EmergencyContact].self, from: Data(record.contacts.utf8))
        for index in contacts.indices { contacts[index].webhookSecret = record.contactSecrets[index] }
        return try SOSSettings(
            enabled: record.enabled, minHeartRate: Double(record.minHeartRate), maxHeartRate: record.maxHeartRate.map(Double.init),
            minOxygenSaturation: record.minOxygenSaturation.map(Double.init), consecutiveReadings: Int(record.consecutiveReadings),
            cancelWindowSeconds: Int(record.cancelWindowSeconds),
            contacts: contacts, medicalNotes: record.medicalNotes
        )
    }
}
