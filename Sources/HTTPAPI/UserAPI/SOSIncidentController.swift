import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird
import SOSManager

/// `/api/users/sos/incidents`: my emergencies, and "It's not an emergency".
struct SOSIncidentController {
    let incidents: SOSIncidentService

    func addRoutes(to group: some RouterMethods<IndividualRequestContext>) {
        group.get("sos/incidents") { request, context -> Page<SOSIncidentBody> in
            let pagination = try KeysetPagination(request)
            let rows = try await incidents.incidents(of: context.individual, before: pagination.beforeId, limit: pagination.limit + 1)
            return pagination.page(rows, id: \.sequence, item: SOSIncidentBody.init)
        }
        group.get("sos/incidents/{incidentId}") { _, context in
            SOSIncidentBody(try await incidents.incident(try Self.incidentId(context), of: context.individual))
        }
        group.post("sos/incidents/{incidentId}/cancel") { _, context in
            SOSIncidentBody(try await incidents.cancel(try Self.incidentId(context), by: context.individual))
        }
    }

    static func incidentId(_ context: some RequestContext) throws -> UUID {
        return try context.parameters.id("incidentId", missing: SOSError.incidentNotFound)
    }
}

/// An incident on the wire; every step's time is present, null until it happens.
struct SOSIncidentBody: ResponseEncodable, Sendable {
    struct Reading: Encodable, Sendable {
        let time: String
        let value: Double
    }

    struct Location: Encodable, Sendable {
        let latitude: Double?
        let longitude: Double?
        let accuracy: Double?
        let recordedAt: String?
        let ageSeconds: Int?
        let stale: Bool
        let homeArea: String

        private enum CodingKeys: String, CodingKey { case latitude, longitude, accuracy, recordedAt, ageSeconds, stale, homeArea }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(latitude, forKey: .latitude)
            try container.encode(longitude, forKey: .longitude)
            try container.encode(accuracy, forKey: .accuracy)
            try container.encode(recordedAt, forKey: .recordedAt)
            try container.encode(ageSeconds, forKey: .ageSeconds)
            try container.encode(stale, forKey: .stale)
            try container.encode(homeArea, forKey: .homeArea)
        }
    }

    let id: String
    let status: String
    let type: String
    let readings: [Reading]
    let location: Location
    let times: [String: String?]
    let dispatchReference: String?
    let dispatchAttempts: Int

    init(_ incident: SOSIncident) {
        id = incident.id.wireString
        status = incident.status.rawValue
        type = incident.type.rawValue
        readings = incident.readings.map { Reading(time: WireFormat.timestamp($0.time), value: $0.value) }
        let located = incident.location
        location = Location(
            latitude: located.latitude, longitude: located.longitude, accuracy: located.accuracy,
            recordedAt: located.recordedAt.map(WireFormat.timestamp),
            ageSeconds: located.recordedAt.map { Int(incident.detectedAt.timeIntervalSince($0).rounded()) },
            stale: located.stale, homeArea: located.homeArea
        )
        times = [
            "receivedAt": WireFormat.timestamp(incident.receivedAt), "detectedAt": WireFormat.timestamp(incident.detectedAt),
            "dispatchDueAt": WireFormat.timestamp(incident.dispatchDueAt), "cancelledAt": incident.cancelledAt.map(WireFormat.timestamp),
            "dispatchedAt": incident.dispatchedAt.map(WireFormat.timestamp), "acknowledgedAt": incident.acknowledgedAt.map(WireFormat.timestamp),
            "resolvedAt": incident.resolvedAt.map(WireFormat.timestamp),
        ]
        dispatchReference = incident.dispatchReference
        dispatchAttempts = incident.dispatchAttempts
    }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(id, forKey: Key("id"))
        try container.encode(status, forKey: Key("status"))
        try container.encode(type, forKey: Key("type"))
        try container.encode(readings, forKey: Key("readings"))
        try container.encode(location, forKey: Key("location"))
        for (name, time) in times { try container.encode(time, forKey: Key(name)) }
        try container.encode(dispatchReference, forKey: Key("dispatchReference"))
        try container.encode(dispatchAttempts, forKey: Key("dispatchAttempts"))
    }
}
