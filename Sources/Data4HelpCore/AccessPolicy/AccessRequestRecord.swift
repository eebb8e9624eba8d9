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

    package init(at: Date, status: AccessStatus, actor: String) {
        self.at = at
        self.status = status
        self.actor = actor
    }
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
    /// Whether it began as the individual's offer (which the organisation accepted).
    package var offered: Bool
    /// What the organisation publishes about itself, when it does.
    package var organisationProfile: OrganisationProfile?
    /// Loaded for a single request; nil in listings.
    package var history: [AccessRequestChange]?

    package init(
        id: Int64, publicId: UUID, thirdPartyId: Int64, organisationPublicId: UUID, organisationName: String, fiscalCode: String,
        purpose: String, subscribe: Bool, status: AccessStatus, asked: AccessScopeRecord, granted: AccessScopeRecord?,
        individualId: Int64?, createdAt: Date, expiresAt: Date, decidedAt: Date?, offered: Bool = false,
        organisationProfile: OrganisationProfile? = nil, history: [AccessRequestChange]? = nil
    ) {
        self.id = id
        self.publicId = publicId
        self.thirdPartyId = thirdPartyId
        self.organisationPublicId = organisationPublicId
        self.organisationName = organisationName
        self.fiscalCode = fiscalCode
        self.purpose = purpose
        self.subscribe = subscribe
        self.status = status
        self.asked = asked
        self.granted = granted
        self.individualId = individualId
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.decidedAt = decidedAt
        self.offered = offered
        self.organisationProfile = organisationProfile
        self.history = history
    }
}
