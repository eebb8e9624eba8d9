/// Where an emergency incident is in its life cycle (`sos_incidents.status`).
package enum SOSIncidentStatus: String, Sendable, CaseIterable {
    /// Opened; the dispatch waits for the cancel window (or is being attempted).
    case detected
    /// Cancelled by the individual before any call went out.
    case cancelled
    /// The dispatch centre accepted the call.
    case dispatched
    /// The dispatch centre acknowledged it (a crew is on the way).
    case acknowledged
    /// The dispatch centre closed it.
    case resolved
}
