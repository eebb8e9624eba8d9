import AccessManager
import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird
import SOSManager

/// Carers, from both sides: `/api/users/carers` (the people I invited to care for me),
/// `/api/users/care-invitations` (invitations to my address), `/api/users/caring` (the people I
/// care for, with what they share). Another individual's link is answered 404.
struct CareController {
    let service: CareService
    let body: JSONBody

    func addRoutes(to group: some RouterMethods<IndividualRequestContext>) {
        group.get("carers", use: links)
        group.post("carers", use: invite)
        group.delete("carers/:linkId", use: withdraw)
        group.get("care-invitations", use: invitations)
        group.post("care-invitations/:linkId/accept", use: accept)
        group.post("care-invitations/:linkId/decline", use: decline)
        group.get("caring", use: caring)
        group.delete("caring/:linkId", use: stopCaring)
    }

    @Sendable func links(_ request: Request, context: IndividualRequestContext) async throws -> ItemList<CareLinkBody> {
        ItemList(items: try await service.links(of: context.individual).map(CareLinkBody.init))
    }

    @Sendable func invite(_ request: Request, context: IndividualRequestContext) async throws -> EditedResponse<CareLinkBody> {
        let form = try await body.decode(CareInvitationForm.self, from: request, context: context)
        let (email, types, rules) = try form.validated()
        let link = try await service.invite(email, types: types, rules: rules, by: context.individual)
        return EditedResponse(status: .created, response: CareLinkBody(link))
    }

    @Sendable func withdraw(_ request: Request, context: IndividualRequestContext) async throws -> HTTPResponse.Status {
        try await service.end(try Self.id(context, .linkNotFound), by: context.individual, as: .individual)
        return .noContent
    }

    @Sendable func invitations(_ request: Request, context: IndividualRequestContext) async throws -> ItemList<CareLinkBody> {
        ItemList(items: try await service.invitations(to: context.individual).map(CareLinkBody.init))
    }

    @Sendable func accept(_ request: Request, context: IndividualRequestContext) async throws -> CareLinkBody {
        CareLinkBody(try await service.respond(to: try Self.id(context, .invitationNotFound), by: context.individual, accept: true))
    }

    @Sendable func decline(_ request: Request, context: IndividualRequestContext) async throws -> CareLinkBody {
        CareLinkBody(try await service.respond(to: try Self.id(context, .invitationNotFound), by: context.individual, accept: false))
    }

    @Sendable func caring(_ request: Request, context: IndividualRequestContext) async throws -> ItemList<CaredForBody> {
        ItemList(items: try await service.caring(for: context.individual).map(CaredForBody.init))
    }

    @Sendable func stopCaring(_ request: Request, context: IndividualRequestContext) async throws -> HTTPResponse.Status {
        try await service.end(try Self.id(context, .linkNotFound), by: context.individual, as: .carer)
        return .noContent
    }

    static func id(_ context: some RequestContext, _ missing: CareError) throws -> UUID {
        return try context.parameters.id("linkId", missing: missing)
    }
}

/// `POST /api/users/carers`.
struct CareInvitationForm: Decodable {
    var email: String?
    var types: [String]?
    var rules: [String]?

    func validated() throws -> (EmailAddress, [SampleType], [UUID]) {
        var fields = FieldValidator()
        let email = fields.required("email", email) { (raw: String) throws(InvalidValue) in try EmailAddress(parsing: raw) }
        let types = fields.required("types", types) { (raw: [String]) throws(InvalidValue) -> [SampleType] in
            guard !raw.isEmpty else { throw InvalidValue("must name at least one type") }
            guard raw.count <= 64 else { throw InvalidValue("may name at most 64 types") }
            var types: [SampleType] = []
            for name in raw {
                guard let type = SampleType(rawValue: name) else { throw InvalidValue("\(name) is not a data type") }
                if !types.contains(type) { types.append(type) }
            }
            return types
        }
        let rules =
            fields.optional("rules", rules) { (raw: [String]) throws(InvalidValue) -> [UUID] in
                guard raw.count <= WatchRuleService.maximumRules else {
                    throw InvalidValue("may name at most \(WatchRuleService.maximumRules) rules")
                }
                var ids: [UUID] = []
                for text in raw {
                    guard let id = UUID(uuidString: text) else { throw InvalidValue("\(text) is not a rule id") }
                    if !ids.contains(id) { ids.append(id) }
                }
                return ids
            } ?? []
        try fields.finish()
        guard let email, let types else { throw Problem.invalidField("email", "is required") }
        return (email, types, rules)
    }
}

/// A care link, as either side sees it.
struct CareLinkBody: ResponseEncodable, Sendable {
    let id: String
    let personName: String
    let carerEmail: String
    @Nullable var carerName: String?
    let types: [String]
    let rules: [String]
    let status: String
    let createdAt: String
    @Nullable var respondedAt: String?
    @Nullable var endedAt: String?
    @Nullable var endedBy: String?

    init(_ link: CareLink) {
        id = link.publicId.wireString
        personName = link.personName
        carerEmail = link.carerEmail
        carerName = link.carerName
        types = link.typeCodes.compactMap { SampleType(storageCode: $0)?.rawValue }
        rules = link.rulePublicIds.map(\.wireString)
        status = link.status.rawValue
        createdAt = WireFormat.timestamp(link.createdAt)
        respondedAt = link.respondedAt.map(WireFormat.timestamp)
        endedAt = link.endedAt.map(WireFormat.timestamp)
        endedBy = link.endedBy?.rawValue
    }
}

/// One person I care for: the link, the latest reading of each shared type, the open alerts.
struct CaredForBody: ResponseEncodable, Sendable {
    struct Latest: Encodable, Sendable {
        let type: String
        let time: String
        let value: Double
    }

    let link: CareLinkBody
    let latest: [Latest]
    let openAlerts: [WatchAlertBody]

    init(_ person: CaredFor) {
        link = CareLinkBody(person.link)
        latest = person.latest.compactMap { reading in
            SampleType(storageCode: reading.typeCode).map {
                Latest(
                    type: $0.rawValue, time: WireFormat.timestamp(milliseconds: reading.timeMs),
                    value: Double(reading.value.description) ?? Double(reading.value))
            }
        }
        openAlerts = person.openAlerts.map(WatchAlertBody.init)
    }
}
