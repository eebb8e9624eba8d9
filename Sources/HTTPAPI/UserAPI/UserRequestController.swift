import AccessManager
import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird

/// `/api/users/requests` and `/api/users/blocked-parties`: the individual decides who may see
/// their data. Only the person a request names can see or answer it; anyone else gets 404.
struct UserRequestController {
    let requests: AccessRequestService
    let accessLog: AccessLog
    let body: JSONBody

    func addRoutes(to group: some RouterMethods<IndividualRequestContext>) {
        group.get("requests") { request, context -> Page<AccessRequestBody> in
            var fields = FieldValidator()
            let status: AccessStatus? = AccessScopeFields.status(request, fields: &fields)
            try fields.finish()
            let pagination = try KeysetPagination(request)
            let rows = try await requests.requests(
                for: context.individual, status: status, beforeId: pagination.beforeId, limit: pagination.limit + 1)
            return pagination.page(rows, id: \.record.id) { AccessRequestBody($0, for: .individual) }
        }
        group.get("requests/{requestId}") { _, context in
            try await AccessRequestBody(
                requests.request(for: context.individual, id: AccessScopeFields.requestId(context.parameters)), for: .individual)
        }
        group.put("requests/{requestId}") { request, context in
            let id = try AccessScopeFields.requestId(context.parameters)
            let form = try await body.decode(DecisionForm.self, from: request, context: context)
            let (accept, narrowing) = try form.validated()
            let decided = try await requests.decide(context.individual, id: id, accept: accept, narrowing: narrowing)
            return AccessRequestBody(decided, for: .individual)
        }
        group.patch("requests/{requestId}") { request, context in
            let id = try AccessScopeFields.requestId(context.parameters)
            let form = try await body.decode(GrantChangeForm.self, from: request, context: context)
            let changed = try await requests.change(context.individual, id: id, change: try form.validated())
            return AccessRequestBody(changed, for: .individual)
        }
        group.post("requests/{requestId}/revoke") { _, context in
            try await AccessRequestBody(requests.revoke(context.individual, id: AccessScopeFields.requestId(context.parameters)), for: .individual)
        }
        group.get("access-log") { request, context -> Page<DisclosureBody> in
            let pagination = try KeysetPagination(request)
            let rows = try await accessLog.entries(for: context.individual, beforeId: pagination.beforeId, limit: pagination.limit + 1)
            return pagination.page(rows, id: \.id, item: DisclosureBody.init)
        }
        group.get("blocked-parties") { _, context -> Page<BlockedPartyBody> in
            let blocked = try await requests.blocked(by: context.individual)
            return Page(
                items: blocked.map { BlockedPartyBody(organisationId: $0.organisation.wireString, name: $0.name, blockedAt: $0.since) },
                nextCursor: nil)
        }
        group.post("blocked-parties") { request, context in
            let form = try await body.decode(BlockForm.self, from: request, context: context)
            var fields = FieldValidator()
            let organisation = fields.required("organisationId", form.organisationId, AccessScopeFields.organisationId)
            try fields.finish()
            try await requests.block(context.individual, organisation: organisation!)
            return Response(status: .noContent)
        }
        group.delete("blocked-parties/{organisationId}") { _, context in
            let organisation = try context.parameters.id("organisationId", missing: AccessRequestError.notFound)
            try await requests.unblock(context.individual, organisation: organisation)
            return Response(status: .noContent)
        }
    }
}

struct DecisionForm: Decodable {
    var decision: String?
    var types: [String]?
    var dataFrom: String?
    var dataTo: String?
    var accessUntil: String?
}

extension DecisionForm {
    /// Accept or deny, and what an acceptance narrows (every bad field named at once).
    func validated() throws(Problem) -> (accept: Bool, narrowing: AccessScopeNarrowing) {
        var fields = FieldValidator()
        let accept = fields.required("decision", decision) { (raw: String) throws(InvalidValue) -> Bool in
            switch raw {
            case "accept": return true
            case "deny": return false
            default: throw InvalidValue("must be accept or deny")
            }
        }
        var narrowing = AccessScopeNarrowing()
        narrowing.kinds = fields.optional("types", types, AccessScopeFields.kinds)
        narrowing.dataFrom = fields.optional("dataFrom", dataFrom, AccessScopeFields.instant)
        narrowing.dataTo = fields.optional("dataTo", dataTo, AccessScopeFields.instant)
        narrowing.accessUntil = fields.optional("accessUntil", accessUntil, AccessScopeFields.instant)
        try fields.finish()
        return (accept!, narrowing)
    }
}

/// `PATCH /api/users/requests/{id}`: what to change in an active grant.
struct GrantChangeForm: Decodable {
    var types: [String]?
    var dataFrom: String?
    var dataTo: String?
    var accessUntil: String?
    var subscribe: Bool?
    var confirmExtension: Bool?

    /// The change (every bad field named at once); a change must name something to change.
    func validated() throws(Problem) -> GrantChange {
        var fields = FieldValidator()
        var change = GrantChange()
        change.narrowing.kinds = fields.optional("types", types, AccessScopeFields.kinds)
        change.narrowing.dataFrom = fields.optional("dataFrom", dataFrom, AccessScopeFields.instant)
        change.narrowing.dataTo = fields.optional("dataTo", dataTo, AccessScopeFields.instant)
        change.narrowing.accessUntil = fields.optional("accessUntil", accessUntil, AccessScopeFields.instant)
        change.subscribe = subscribe
        change.confirmExtension = confirmExtension ?? false
        if types == nil, dataFrom == nil, dataTo == nil, accessUntil == nil, subscribe == nil {
            fields.fail("types", "name something to change: types, dataFrom, dataTo, accessUntil or subscribe")
        }
        try fields.finish()
        return change
    }
}

struct BlockForm: Decodable {
    var organisationId: String?
}

struct BlockedPartyBody: Encodable, Sendable {
    let organisationId: String
    let name: String
    let blockedAt: Date
}
