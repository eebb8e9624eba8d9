import AccessManager
import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird

/// `/portal/requests`: an organisation asks individuals for their data, follows its requests,
/// and pages through the data of an accepted one (within the grant, logged in the individual's
/// access log like any API read).
struct PortalRequestPages {
    let portal: PortalSite

    let requests: AccessRequestService
    let grantedData: GrantedDataReader

    func addRoutes(to group: some RouterMethods<AppRequestContext>) {
        group.get("requests", use: requestsPage)
        group.post("requests", use: fileRequest)
        group.get("requests/{requestId}", use: requestPage)
    }

    /// `GET /portal/requests`: the form and the organisation's requests.
    @Sendable func requestsPage(_ request: Request, context: AppRequestContext) async throws -> Response {
        try await listPage(context)
    }

    /// `POST /portal/requests`: files the form's request, or shows the form again with what was wrong.
    @Sendable func fileRequest(_ request: Request, context: AppRequestContext) async throws -> Response {
        var typed: [String: Any] = [:]
        return try await portal.submit(
            request, context,
            showing: { context, values, status in
                try await listPage(context, values: values.merging(typed) { $1 }, status: status)
            }
        ) { form in
            let types = form.values("types")
            typed = [
                "fiscalCode": form["fiscalCode"] ?? "", "purpose": form["purpose"] ?? "", "dataFrom": form["dataFrom"] ?? "",
                "dataTo": form["dataTo"] ?? "", "accessUntil": form["accessUntil"] ?? "", "subscribe": form["subscribe"] != nil,
                "checked": Dictionary(uniqueKeysWithValues: types.map { ($0, true) }),
            ]
            let filed = try await AccessRequestForm(
                fiscalCode: form["fiscalCode"], types: types.isEmpty ? nil : types,
                dataFrom: form.instant("dataFrom", endOfDay: false), dataTo: form.instant("dataTo", endOfDay: true),
                accessUntil: form.instant("accessUntil", endOfDay: true), purpose: form["purpose"], subscribe: form["subscribe"] != nil
            ).file(by: try context.signedInParty(), with: requests)
            return PortalForm.redirect(to: "/portal/requests/\(filed.record.publicId.wireString)")
        }
    }

    /// `GET /portal/requests/{requestId}`: one request and, once granted, a page of its data.
    @Sendable func requestPage(_ request: Request, context: AppRequestContext) async throws -> Response {
        let id = try AccessScopeFields.requestId(context.parameters)
        let party = try context.signedInParty()
        let filed = try await requests.request(of: party, id: id)
        var values: [String: Any] = ["request": PortalPages.values(of: AccessRequestBody(filed, for: .thirdParty))]
        if filed.record.status == .granted {
            do {
                let query = try SampleListingQuery(request)
                let page = query.page(
                    try await grantedData.samples(
                        for: party, request: id, types: query.types, from: query.range.from, to: query.range.to,
                        order: query.range.order, limit: min(query.range.limit, 50), after: query.after
                    ))
                values["samples"] = PortalPages.values(of: page.items)
                values["hasSamples"] = !page.items.isEmpty
                if let cursor = page.nextCursor?.addingPercentEncoding(withAllowedCharacters: .alphanumerics) {
                    values["next"] = "/portal/requests/\(id.wireString)?cursor=\(cursor)"
                }
            } catch {
                values["dataProblem"] = PortalPages.errorValues(error, logger: context.logger).values["problem"]
            }
        }
        return try await portal.page("portal-request", title: "Request", context, values: values)
    }

    private func listPage(_ context: AppRequestContext, values: [String: Any] = [:], status: HTTPResponse.Status = .ok) async throws -> Response {
        let rows = try await requests.requests(of: try context.signedInParty(), status: nil, beforeId: nil, limit: 100)
        let checked = values["checked"] as? [String: Bool] ?? [:]
        var all = values
        all["requests"] = PortalPages.values(of: rows.map { AccessRequestBody($0, for: .thirdParty) })
        all["hasRequests"] = !rows.isEmpty
        all["kinds"] = DataKind.allWireNames.map { ["name": $0, "checked": checked[$0] ?? false] }
        return try await portal.page("portal-requests", title: "Access requests", context, values: all, status: status)
    }
}
