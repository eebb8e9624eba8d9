import AccessManager
import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird

/// A request on the wire. A party sees the fiscal code it asked for; the individual sees the
/// organisation that asks. Neither sees anything of the other's account.
struct AccessRequestBody: ResponseEncodable, Sendable {
    struct Scope: Encodable, Sendable {
        let types: [String]
        let dataFrom: Date?
        let dataTo: Date?
        let accessUntil: Date?

        init(_ scope: AccessScope) {
            types = scope.kinds.map(\.wireName)
            dataFrom = scope.dataFrom
            dataTo = scope.dataTo
            accessUntil = scope.accessUntil
        }
    }

    /// The organisation that asks, with what it publishes about itself (`profile`, null when it
    /// published nothing).
    struct Organisation: Encodable, Sendable {
        struct Profile: Encodable, Sendable {
            let purpose: String
            let privacyContact: String
            @Nullable var website: String?
        }

        let id: String
        let name: String
        @Nullable var profile: Profile?

        init(id: String, name: String, profile: OrganisationProfile?) {
            self.id = id
            self.name = name
            self.profile = profile.map { Profile(purpose: $0.purpose, privacyContact: $0.privacyContact, website: $0.website) }
        }
    }

    struct Change: Encodable, Sendable {
        let status: String
        let at: Date
        let actor: String
    }

    let id: String
    let status: String
    /// `request` (the organisation asked) or `offer` (the individual offered, the organisation accepted).
    let origin: String
    let fiscalCode: String?
    let organisation: Organisation?
    let purpose: String
    let subscribe: Bool
    let types: [String]
    let dataFrom: Date?
    let dataTo: Date?
    let accessUntil: Date?
    let createdAt: Date
    let expiresAt: Date
    let decidedAt: Date?
    let grant: Scope?
    /// In the answer about one request; left out of listings.
    let history: [Change]?

    enum Viewer { case thirdParty, individual }

    init(_ request: AccessRequest, for viewer: Viewer) {
        let record = request.record
        id = record.publicId.wireString
        status = record.status.rawValue
        fiscalCode = viewer == .thirdParty ? record.fiscalCode : nil
        origin = record.offered ? "offer" : "request"
        organisation =
            viewer == .individual
            ? Organisation(id: record.organisationPublicId.wireString, name: record.organisationName, profile: record.organisationProfile) : nil
        purpose = record.purpose
        subscribe = record.subscribe
        let asked = request.asked
        types = asked.kinds.map(\.wireName)
        dataFrom = asked.dataFrom
        dataTo = asked.dataTo
        accessUntil = asked.accessUntil
        createdAt = record.createdAt
        expiresAt = record.expiresAt
        decidedAt = record.decidedAt
        grant = request.granted.map(Scope.init)
        history = record.history?.map { Change(status: $0.status.rawValue, at: $0.at, actor: $0.actor) }
    }

    private enum CodingKeys: String, CodingKey {
        case id, status, origin, fiscalCode, organisation, purpose, subscribe, types, dataFrom, dataTo, accessUntil
        case createdAt, expiresAt, decidedAt, grant, history
    }

    /// `grant` is always present (null until granted); the other optional fields only when set.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(status, forKey: .status)
        try container.encode(origin, forKey: .origin)
        try container.encodeIfPresent(fiscalCode, forKey: .fiscalCode)
        try container.encodeIfPresent(organisation, forKey: .organisation)
        try container.encode(purpose, forKey: .purpose)
        try container.encode(subscribe, forKey: .subscribe)
        try container.encode(types, forKey: .types)
        try container.encodeIfPresent(dataFrom, forKey: .dataFrom)
        try container.encodeIfPresent(dataTo, forKey: .dataTo)
        try container.encodeIfPresent(accessUntil, forKey: .accessUntil)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(expiresAt, forKey: .expiresAt)
        try container.encodeIfPresent(decidedAt, forKey: .decidedAt)
        try container.encode(grant, forKey: .grant)
        try container.encodeIfPresent(history, forKey: .history)
    }
}

/// Shared parsing of scope fields (`types`, `dataFrom`, `dataTo`, `accessUntil`).
enum AccessScopeFields {
    static func kinds(_ raw: [String]) throws(InvalidValue) -> [DataKind] {
        try raw.map { (name: String) throws(InvalidValue) -> DataKind in
            guard let kind = DataKind(wireName: name) else {
                throw InvalidValue("must list data types among \(DataKind.allWireNames.joined(separator: ", "))")
            }
            return kind
        }
    }

    static func instant(_ raw: String) throws(InvalidValue) -> Date {
        guard let date = RFC3339Timestamp.parse(raw) else {
            throw InvalidValue("must be an RFC 3339 time with an offset, such as 2026-11-21T08:30:00Z")
        }
        return date
    }

    /// `?status=` of a listing: one of the set's wire names (requests', offers').
    static func status<Status: RawRepresentable<String> & CaseIterable>(_ request: Request, fields: inout FieldValidator) -> Status? {
        fields.optional("status", request.uri.queryParameters["status"].map(String.init)) { (raw: String) throws(InvalidValue) in
            guard let status = Status(rawValue: raw) else {
                throw InvalidValue("must be one of \(Status.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return status
        }
    }

    /// An organisation's public id in a body (`organisationId`).
    static func organisationId(_ raw: String) throws(InvalidValue) -> UUID {
        guard let id = UUID(uuidString: raw) else { throw InvalidValue("must be an organisation id") }
        return id
    }

    /// A request id from the path: a malformed one names no request.
    static func requestId(_ parameters: Parameters) throws -> UUID {
        return try parameters.id("requestId", missing: AccessRequestError.notFound)
    }
}
