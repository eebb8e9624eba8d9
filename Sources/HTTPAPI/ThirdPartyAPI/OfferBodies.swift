import AccessManager
import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird

/// An organisation's public profile on the wire (the directory, beside requests and offers).
struct OrganisationProfileBody: ResponseEncodable, Sendable {
    let id: String
    let name: String
    let listed: Bool
    let purpose: String
    let privacyContact: String
    @Nullable var website: String?
    let updatedAt: Date

    init(_ profile: OrganisationProfile) {
        id = profile.organisationPublicId.wireString
        name = profile.name
        listed = profile.listed
        purpose = profile.purpose
        privacyContact = profile.privacyContact
        website = profile.website
        updatedAt = profile.updatedAt
    }
}

/// `PUT /api/thirdparties/me/profile`.
struct OrganisationProfileForm: Decodable {
    var listed: Bool?
    var purpose: String?
    var privacyContact: String?
    var website: String?

    func validated() throws(Problem) -> PublishedProfile {
        var fields = FieldValidator()
        let purpose = fields.required("purpose", purpose, AccessPurpose.init(parsing:))
        let contact = fields.required("privacyContact", privacyContact, EmailAddress.init(parsing:))
        let website = fields.optional("website", website, WebsiteAddress.init(parsing:))
        try fields.finish()
        return PublishedProfile(listed: listed ?? false, purpose: purpose!, privacyContact: contact!, website: website)
    }
}

/// An offer on the wire. The organisation sees who offers (name and fiscal code: the person
/// chose to tell it); the person sees the organisation.
struct OfferBody: ResponseEncodable, Sendable {
    struct Person: Encodable, Sendable {
        let name: String
        let fiscalCode: String
    }

    let id: String
    let status: String
    @Nullable var person: Person?
    @Nullable var organisation: AccessRequestBody.Organisation?
    let message: String
    let types: [String]
    @Nullable var dataFrom: Date?
    @Nullable var dataTo: Date?
    @Nullable var accessUntil: Date?
    let subscribe: Bool
    let createdAt: Date
    let expiresAt: Date
    @Nullable var decidedAt: Date?
    /// The grant an accepted offer became: `/api/thirdparties/requests/{grantId}` for the
    /// organisation, `/api/users/requests/{grantId}` for the person.
    @Nullable var grantId: String?

    init(_ offer: DataOffer, for viewer: AccessRequestBody.Viewer) {
        id = offer.publicId.wireString
        status = offer.status.rawValue
        person = viewer == .thirdParty ? Person(name: offer.personName, fiscalCode: offer.fiscalCode) : nil
        organisation =
            viewer == .individual
            ? AccessRequestBody.Organisation(id: offer.organisationPublicId.wireString, name: offer.organisationName, profile: nil) : nil
        message = offer.message
        types = offer.scope.types
        dataFrom = offer.scope.dataFrom
        dataTo = offer.scope.dataTo
        accessUntil = offer.scope.until
        subscribe = offer.subscribe
        createdAt = offer.createdAt
        expiresAt = offer.expiresAt
        decidedAt = offer.decidedAt
        grantId = offer.grantPublicId?.wireString
    }
}

/// `POST /api/users/offers`.
struct OfferForm: Decodable {
    var organisationId: String?
    var message: String?
    var types: [String]?
    var dataFrom: String?
    var dataTo: String?
    var accessUntil: String?
    var subscribe: Bool?

    func validated() throws -> NewOffer {
        var fields = FieldValidator()
        let organisation = fields.required("organisationId", organisationId, AccessScopeFields.organisationId)
        let message = fields.required("message", message, AccessPurpose.init(parsing:))
        let kinds = fields.required("types", types, AccessScopeFields.kinds)
        let dataFrom = fields.optional("dataFrom", dataFrom, AccessScopeFields.instant)
        let dataTo = fields.optional("dataTo", dataTo, AccessScopeFields.instant)
        let accessUntil = fields.optional("accessUntil", accessUntil, AccessScopeFields.instant)
        try fields.finish()
        let scope = try AccessScope(kinds: kinds!, dataFrom: dataFrom, dataTo: dataTo, accessUntil: accessUntil)
        return NewOffer(organisation: organisation!, message: message!, scope: scope, subscribe: subscribe ?? false)
    }
}

enum OfferFields {
    /// An offer id from the path: a malformed one names no offer.
    static func offerId(_ parameters: Parameters) throws -> UUID {
        try parameters.id("offerId", missing: OfferError.notFound)
    }
}
