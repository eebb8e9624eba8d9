import Data4HelpCore
import Foundation

/// The scope of a request or of a grant: which data types, which part of the history, until when.
package struct AccessScopeRecord: Sendable, Equatable {
    package var types: [String]
    package var dataFrom: Date?
    package var dataTo: Date?
    package var until: Date?

    package init(types: [String], dataFrom: Date?, dataTo: Date?, until: Date?) {
        self.types = types
        self.dataFrom = dataFrom
        self.dataTo = dataTo
        self.until = until
    }
}

/// One change of a policy's state.
package struct AccessRequestChange: Sendable, Equatable {
    package var at: Date
    package var status: AccessStatus
    package var actor: String
}

/// An access request and the policy it became, as stored. `status` is the effective one: a
/// pending request or a grant past its end reads `expired`.
package struct AccessRequestRecord: Sendable, Equatable {
    package var id: Int64
    package var publicId: UUID
    package var thirdPartyId: Int64
    package var organisationPublicId: UUID
    package var organisationName: String
    package var fiscalCode: String
    package var purpose: String
    package var subscribe: Bool
    package var status: AccessStatus
    package var asked: AccessScopeRecord
    package var granted: AccessScopeRecord?
    package var individualId: Int64?
    package var createdAt: Date
    package var expiresAt: Date
    package var decidedAt: Date?
    /// Loaded for a single request; nil in listings.
    package var history: [AccessRequestChange]?
}

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
