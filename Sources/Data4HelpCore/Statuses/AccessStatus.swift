/// Where an access request is in its life cycle (`access_requests.status`).
///
/// As read, the status is the effective one: a pending request or a grant whose time is up reads
/// `expired` before the janitor records it (SQL: `access_request_effective_status`).
package enum AccessStatus: String, Sendable, CaseIterable {
    /// Asked, not yet decided by the individual.
    case pending
    /// Accepted: the grant is active (SQL: `access_grant_active`).
    case granted
    /// Refused by the individual.
    case denied
    /// Ended by the individual (or by a block) after it was granted.
    case revoked
    /// Not decided in time, or a grant past its end.
    case expired

    /// A request that can still change: pending or granted. The others are closed for good.
    package var isOpen: Bool { self == .pending || self == .granted }
}
