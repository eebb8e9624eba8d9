import Foundation

/// Where an individual's offer stands. `offered` past its expiry reads `expired`.
package enum OfferStatus: String, Sendable, CaseIterable {
    /// Waiting for the organisation.
    case offered
    /// Accepted: it is a grant now (`DataOffer.grantPublicId`).
    case accepted
    /// The organisation said no.
    case declined
    /// The individual took it back before an answer.
    case withdrawn
    /// Not answered in time.
    case expired
}

/// An individual's offer of chosen data to an organisation, as both sides see it.
package struct DataOffer: Sendable, Equatable {
    package var sequence: Int64
    package var publicId: UUID
    package var individualId: Int64
    /// The person's name and fiscal code: the organisation learns them from the offer itself,
    /// which the person chose to send.
    package var personName: String
    package var fiscalCode: String
    package var organisationPublicId: UUID
    package var organisationName: String
    package var message: String
    /// What is offered (types, window, until when).
    package var scope: AccessScopeRecord
    package var subscribe: Bool
    package var status: OfferStatus
    package var createdAt: Date
    package var expiresAt: Date
    package var decidedAt: Date?
    /// The grant an accepted offer became (an access request's public id).
    package var grantPublicId: UUID?

    package init(
        sequence: Int64, publicId: UUID, individualId: Int64, personName: String, fiscalCode: String, organisationPublicId: UUID,
        organisationName: String, message: String, scope: AccessScopeRecord, subscribe: Bool, status: OfferStatus, createdAt: Date,
        expiresAt: Date, decidedAt: Date?, grantPublicId: UUID?
    ) {
        self.sequence = sequence
        self.publicId = publicId
        self.individualId = individualId
        self.personName = personName
        self.fiscalCode = fiscalCode
        self.organisationPublicId = organisationPublicId
        self.organisationName = organisationName
        self.message = message
        self.scope = scope
        self.subscribe = subscribe
        self.status = status
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.decidedAt = decidedAt
        self.grantPublicId = grantPublicId
    }
}
