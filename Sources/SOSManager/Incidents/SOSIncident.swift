import Data4HelpCore
import DatabaseLink
import Foundation
import HealthSharing

/// An emergency as its individual sees it.
package struct SOSIncident: Sendable, Equatable {
    package struct Reading: Sendable, Equatable, Decodable {
        package var timeMs: Int64
        package var value: Double
        package var time: Date { Date(timeIntervalSince1970: Double(timeMs) / 1000) }
    }

    package struct Location: Sendable, Equatable {
        package var latitude: Double?
        package var longitude: Double?
        package var accuracy: Double?
        package var recordedAt: Date?
        package var stale: Bool
        package var homeArea: String
    }

    package var id: UUID
    package var status: SOSIncidentStatus
    package var type: SampleType
    package var readings: [Reading]
    package var receivedAt: Date
    package var detectedAt: Date
    package var dispatchDueAt: Date
    package var cancelledAt: Date?
    package var dispatchedAt: Date?
    package var acknowledgedAt: Date?
    package var resolvedAt: Date?
    package var dispatchReference: String?
    package var dispatchAttempts: Int
    package var location: Location
    /// Kept internal for cursors: the position in the individual's list.
    package var sequence: Int64

    init(_ record: SOSIncidentRecord) throws {
        id = record.publicId
        status = record.status
        type = SampleType(storageCode: record.sampleType) ?? .heartRate
        readings = try Self.readings(record.readings)
        receivedAt = record.receivedAt
        detectedAt = record.detectedAt
        dispatchDueAt = record.dispatchDueAt
        cancelledAt = record.cancelledAt
        dispatchedAt = record.dispatchedAt
        acknowledgedAt = record.acknowledgedAt
        resolvedAt = record.resolvedAt
        dispatchReference = record.dispatchReference
        dispatchAttempts = record.dispatchAttempts
        location = Location(
            latitude: record.latitude, longitude: record.longitude, accuracy: record.accuracy.map(Double.init), recordedAt: record.locatedAt,
            stale: record.locationStale, homeArea: record.homeArea
        )
        sequence = record.id
    }

    static func readings(_ json: String) throws -> [Reading] {
        try JSONDecoder().decode([Reading].self, from: Data(json.utf8))
    }
}
