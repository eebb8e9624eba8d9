import AccessManager
import Data4HelpCore
import DatabaseLink
import Foundation

/// Why an offer operation was refused.
package enum OfferError: Error, Equatable {
    /// No such offer of the caller's.
    case notFound
    /// No organisation with that id.
    case unknownOrganisation
    /// The person has an open offer to that organisation.
    case alreadyOffered
    /// The person has the most open offers there may be.
    case tooMany(maximum: Int)
    /// The offer is no longer open; its status.
    case wrongState(current: OfferStatus)
}

/// Offers (the Access Policy Manager, started by the individual): a person offers chosen data —
/// types, window, until when, with or without a subscription — to a registered organisation,
/// which accepts or declines. An accepted offer is a grant like any other: the organisation
/// reads it, is sent its data and told of changes as under a request it made, and the person
/// narrows, extends back within the offer or revokes it as any grant.
package struct OfferService: Sendable {
    let store: DataOfferStore
    /// How long an offer waits for an answer.
    package let lifetime: Duration

    /// Open offers one person may have.
    package static let maximumOpen = 20

    package init(database: Database, lifetime: Duration = .seconds(30 * 86_400)) {
        store = DataOfferStore(database: database)
        self.lifetime = lifetime
    }

    package func offer(_ offer: NewOffer, by individual: IndividualID, now: Date = Date()) async throws -> DataOffer {
        let result = try await store.create(
            individualId: individual.rowId, organisation: offer.organisation, message: offer.message.value, scope: offer.scope.record,
            subscribe: offer.subscribe, expiresAt: now.addingTimeInterval(Double(lifetime.components.seconds)), maximum: Self.maximumOpen)
        switch result {
        case .success(let offer): return offer
        case .failure(.unknownOrganisation): throw OfferError.unknownOrganisation
        case .failure(.alreadyOpen): throw OfferError.alreadyOffered
        case .failure(.tooMany): throw OfferError.tooMany(maximum: Self.maximumOpen)
        }
    }

    /// The person's offers, newest first.
    package func offers(of individual: IndividualID) async throws -> [DataOffer] {
        try await store.listForIndividual(individualId: individual.rowId, limit: 100)
    }

    package func offer(of individual: IndividualID, id: UUID) async throws -> DataOffer {
        guard let offer = try await store.findForIndividual(individualId: individual.rowId, publicId: id) else { throw OfferError.notFound }
        return offer
    }

    package func withdraw(_ id: UUID, by individual: IndividualID) async throws -> DataOffer {
        try Self.result(await store.withdraw(individualId: individual.rowId, publicId: id))
    }

    /// The organisation's offers, newest first.
    package func offers(to party: ThirdPartyID, status: OfferStatus?, beforeId: Int64?, limit: Int) async throws -> [DataOffer] {
        try await store.listForParty(thirdPartyId: party.rowId, status: status, beforeId: beforeId, limit: limit)
    }

    package func offer(to party: ThirdPartyID, id: UUID) async throws -> DataOffer {
        guard let offer = try await store.findForParty(thirdPartyId: party.rowId, publicId: id) else { throw OfferError.notFound }
        return offer
    }

    /// The organisation accepts (the offer becomes a grant) or declines an open offer.
    package func answer(_ id: UUID, by party: ThirdPartyID, accept: Bool) async throws -> DataOffer {
        try Self.result(await store.answer(thirdPartyId: party.rowId, publicId: id, accept: accept))
    }

    private static func result(_ outcome: DataOfferStore.Outcome) throws -> DataOffer {
        switch outcome {
        case .changed(let offer): return offer
        case .notFound: throw OfferError.notFound
        case .wrongState(let status): throw OfferError.wrongState(current: status)
        }
    }
}

/// An offer as the person makes it, validated: to whom, what, and a message shown to the
/// organisation (why they offer, how to reach them — their own words).
package struct NewOffer: Sendable {
    package var organisation: UUID
    package var message: AccessPurpose
    package var scope: AccessScope
    package var subscribe: Bool

    package init(organisation: UUID, message: AccessPurpose, scope: AccessScope, subscribe: Bool) {
        self.organisation = organisation
        self.message = message
        self.scope = scope
        self.subscribe = subscribe
    }
}
