import Data4HelpCore
import DatabaseLink
import Foundation

/// `sos.detected`, to the individual's own device the moment an incident opens: the call goes
/// out at `dispatchDueAt` unless they cancel before.
struct SOSDetectedNotice: OutboxNotice {
    static let eventType = "sos.detected"

    let incidentId: String
    let status = SOSIncidentStatus.detected.rawValue
    let detectedAt: String
    let dispatchDueAt: String

    init(_ incident: OpenedIncident) {
        incidentId = incident.publicId.wireString
        detectedAt = WireFormat.timestamp(incident.detectedAt)
        dispatchDueAt = WireFormat.timestamp(incident.dispatchDueAt)
    }
}
