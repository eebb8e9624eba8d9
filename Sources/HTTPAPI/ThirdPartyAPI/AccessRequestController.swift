import AccessManager
import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird

/// `/api/thirdparties/requests`: a party asks for one individual's data and follows its requests.
struct AccessRequestController {
    let requests: AccessRequestService
    let body: JSONBody

    func addRoutes(to group: some RouterMethods<ThirdPartyRequestContext>) {
        group.post("requests") { request, context -> EditedResponse<AccessRequestBody> in
            let form = try await body.decode(AccessRequestForm.self, from: request, context: context)
            let filed = try await form.file(by: context.party, with: requests)
            // 202: the individual decides later; an unknown fiscal code gets exactly this answer too.
            return EditedResponse(
                status: .accepted,
                headers: [.location: "/api/thirdparties/requests/\(filed.record.publicId.wireString)"],
                response: AccessRequestBody(filed, for: .thirdParty)
            )
        }
        group.get("requests") { request, context -> Page<AccessRequestBody> in
            var fields = FieldValidator()
            let status: AccessStatus? = AccessScopeFields.status(request, fields: &fields)
            try fields.finish()
            let pagination = try KeysetPagination(request)
            let rows = try await requests.requests(of: context.party, status: status, beforeId: pagination.beforeId, limit: pagination.limit + 1)
            return pagination.page(rows, id: \.record.id) { AccessRequestBody($0, for: .thirdParty) }
        }
        group.get("requests/{requestId}") { _, context in
            try await AccessRequestBody(requests.request(of: context.party, id: AccessScopeFields.requestId(context.parameters)), for: .thirdParty)
        }
    }
}

struct AccessRequestForm: Decodable {
    var fiscalCode: String?
    var types: [String]?
    var dataFrom: String?
    var dataTo: String?
    var accessUntil: String?
    var purpose: String?
    var subscribe: Bool?
}

extension AccessRequestForm {
    /// Validates the form (every bad field named at once) and files the request.
    func file(by party: ThirdPartyID, with requests: AccessRequestService) async throws -> AccessRequest {
        var fields = FieldValidator()
        let fiscalCode = fields.required("fiscalCode", fiscalCode, FiscalCode.init(parsing:))
        let kinds = fields.required("types", types, AccessScopeFields.kinds)
        let dataFrom = fields.optional("dataFrom", dataFrom, AccessScopeFields.instant)
        let dataTo = fields.optional("dataTo", dataTo, AccessScopeFields.instant)
        let accessUntil = fields.optional("accessUntil", accessUntil, AccessScopeFields.instant)
        let purpose = fields.required("purpose", purpose, AccessPurpose.init(parsing:))
        try fields.finish()
        let scope = try AccessScope(kinds: kinds!, dataFrom: dataFrom, dataTo: dataTo, accessUntil: accessUntil)
        return try await requests.request(by: party, fiscalCode: fiscalCode!, scope: scope, purpose: purpose!, subscribe: subscribe ?? false)
    }
}
