import Data4HelpCore
import DatabaseLink
import Foundation

/// `sos.dispatched`, to each emergency contact with a webhook address as the first call to the
/// dispatch centre goes out: who, where (null coordinates when no fix was known), since when.
struct SOSDispatchedNotice: OutboxNotice {
    static let eventType = "sos.dispatched"

    let incidentId: String
    let person: String
    let latitude: Double?
    let longitude: Double?
    let locationStale: Bool
    let homeArea: String
    let detectedAt: String

    init(_ claimed: ClaimedIncident) {
        incidentId = claimed.incident.publicId.wireString
        person = claimed.fullName
        latitude = claimed.incident.latitude
        longitude = claimed.incident.longitude
        locationStale = claimed.incident.locationStale
        homeArea = claimed.incident.homeArea
        detectedAt = WireFormat.timestamp(claimed.incident.detectedAt)
    }

    private enum CodingKeys: String, CodingKey { case incidentId, person, latitude, longitude, locationStale, homeArea, detectedAt }

    /// Coordinates are always present, null when unknown (the synthesised coding would leave them out).
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(incidentId, forKey: .incidentId)
        try container.encode(person, forKey: .person)
        try container.encode(latitude, forKey: .latitude)
        try container.encode(longitude, forKey: .longitude)
        try container.encode(locationStale, forKey: .locationStale)
        try container.encode(homeArea, forKey: .homeArea)
        try container.encode(detectedAt, forKey: .detectedAt)
    }
}
