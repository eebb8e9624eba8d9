import Data4HelpCore
import Foundation

/// A new request, validated.
package struct NewAccessRequest: Sendable {
    package var thirdPartyId: Int64
    package var fiscalCode: String
    package var purpose: String
    package var subscribe: Bool
    package var scope: AccessScopeRecord
    package var expiresAt: Date

    package init(thirdPartyId: Int64, fiscalCode: String, purpose: String, subscribe: Bool, scope: AccessScopeRecord, expiresAt: Date) {
        self.thirdPartyId = thirdPartyId
        self.fiscalCode = fiscalCode
        self.purpose = purpose
        self.subscribe = subscribe
        self.scope = scope
        self.expiresAt = expiresAt
    }
}

/// Why a change to a request could not be made.
package enum AccessRequestStoreOutcome: Sendable, Equatable {
    case changed(AccessRequestRecord)
    /// No such request for this caller.
    case notFound
    /// The request is not in a state that allows the change; its current status.
    case wrongState(AccessStatus)
}
