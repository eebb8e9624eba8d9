import DatabaseLink
import Foundation
import HealthSharing

/// What the dispatch centre receives: who, where, which vitals, since when. The JSON body of a
/// dispatch (`EmergencyCall.json()`), documented in the README for dispatch-centre integrators.
package struct EmergencyCall: Sendable, Codable, Equatable {
    package struct Person: Sendable, Codable, Equatable {
        package var name: String
        package var age: Int
        package var sex: String
        package var medicalNotes: String
    }

    package struct Location: Sendable, Codable, Equatable {
        package var latitude: Double?
        package var longitude: Double?
        /// Metres (68 % radius), as the phone reported it.
        package var accuracy: Double?
        package var recordedAt: Date?
        /// Seconds between the fix and detection.
        package var ageSeconds: Int?
        /// No fix within 15 minutes of detection: look for the person in their home area.
        package var stale: Bool
        /// ISO 3166-2 subdivision.
        package var homeArea: String
    }

    package struct Reading: Sendable, Codable, Equatable {
        package var time: Date
        package var value: Double
    }

    package struct Vitals: Sendable, Codable, Equatable {
        package var type: String
        package var unit: String
        package var readings: [Reading]
    }

    package struct Contact: Sendable, Codable, Equatable {
        package var name: String
        package var phone: String
        package var email: String?
    }

    /// Also the idempotency key: a repeated call carries the same id.
    package var incidentId: UUID
    package var detectedAt: Date
    package var person: Person
    package var location: Location
    package var vitals: Vitals
    /// The individual's emergency contacts, for the dispatch centre to call.
    package var contacts: [Contact]

    init(_ claimed: ClaimedIncident) throws {
        let incident = claimed.incident
        incidentId = incident.publicId
        detectedAt = incident.detectedAt
        let years = Calendar(identifier: .gregorian).dateComponents([.year], from: claimed.birthDate, to: incident.detectedAt).year ?? 0
        person = Person(name: claimed.fullName, age: years, sex: claimed.sex, medicalNotes: claimed.medicalNotes)
        location = Location(
            latitude: incident.latitude, longitude: incident.longitude, accuracy: incident.accuracy.map(Double.init), recordedAt: incident.locatedAt,
            ageSeconds: incident.locatedAt.map { Int(incident.detectedAt.timeIntervalSince($0).rounded()) }, stale: incident.locationStale,
            homeArea: incident.homeArea
        )
        let type = SampleType(storageCode: incident.sampleType)
        var unit = ""
        if case .quantity(let canonical, _, _) = type?.definition { unit = canonical }
        vitals = Vitals(
            type: type?.rawValue ?? "unknown", unit: unit,
            readings: try SOSIncident.readings(incident.readings).map { Reading(time: $0.time, value: $0.value) }
        )
        contacts = try JSONDecoder().decode([EmergencyContact].self, from: Data(claimed.contacts.utf8))
            .map { Contact(name: $0.name, phone: $0.phone, email: $0.email) }
    }

    package func json() throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted)))
        }
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(self))
    }
}
