import AccessManager
import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird
import SOSManager

/// The individual's own ways of sharing: `/me/offers` (find an organisation in the directory,
/// offer it chosen data, follow and withdraw offers), `/me/shares` (share links for a doctor:
/// create, see openings, revoke) and `/me/privacy` (the privacy record and the aggregates
/// switch). The API's validation and refusals, shown beside their fields.
struct MeSharingPages {
    let site: PortalSite
    let offers: OfferService
    let directory: OrganisationDirectory
    let shareLinks: ShareLinkService
    let privacy: PrivacyRecordService
    let accounts: IndividualAccounts
    /// The public address share links start with.
    let baseURL: String

    func addRoutes(to group: some RouterMethods<AppRequestContext>) {
        group.get("offers") { request, context in
            try await offersPage(context, search: request.uri.queryParameters["q"].map(String.init))
        }
        group.post("offers") { request, context in
            try await site.submit(
                request, context, keeping: ["organisationId", "message"], showing: { try await offersPage($0, search: nil, values: $1, status: $2) }
            ) { form in
                let types = form.values("types")
                let offer = try OfferForm(
                    organisationId: form["organisationId"], message: form["message"], types: types.isEmpty ? nil : types,
                    dataFrom: form.instant("dataFrom", endOfDay: false), dataTo: form.instant("dataTo", endOfDay: true),
                    accessUntil: form.instant("accessUntil", endOfDay: true), subscribe: form["subscribe"] != nil
                ).validated()
                _ = try await offers.offer(offer, by: try context.signedInIndividual())
                return PortalForm.redirect(to: "/me/offers")
            }
        }
        group.post("offers/{offerId}/withdraw") { request, context in
            try await site.submit(request, context, showing: { try await offersPage($0, search: nil, values: $1, status: $2) }) { _ in
                _ = try await offers.withdraw(try OfferFields.offerId(context.parameters), by: try context.signedInIndividual())
                return PortalForm.redirect(to: "/me/offers")
            }
        }
        group.get("shares") { _, context in try await sharesPage(context) }
        group.post("shares") { request, context in
            try await site.submit(request, context, keeping: ["label", "dataFrom", "dataTo", "expiresAt"], showing: sharesPage) { form in
                let types = form.values("types")
                let share = try ShareLinkForm(
                    label: form["label"], types: types.isEmpty ? nil : types, dataFrom: form.instant("dataFrom", endOfDay: false),
                    dataTo: form.instant("dataTo", endOfDay: true).map(Self.nextMidnight), expiresAt: form.instant("expiresAt", endOfDay: true),
                    pin: (form["pin"]?.isEmpty ?? true) ? nil : form["pin"]
                ).validated()
                let created = try await shareLinks.create(share, by: try context.signedInIndividual())
                // The link is shown this once (only its digest is kept).
                return try await sharesPage(context, values: ["created": ["url": baseURL + "/s/" + created.token, "label": created.link.label]])
            }
        }
        group.get("shares/{linkId}") { _, context in
            let (link, views) = try await shareLinks.link(try ShareLinkController.id(context), of: try context.signedInIndividual())
            return try await site.page(
                "me-share", title: "Share link “\(link.label)”", context,
                values: [
                    "link": PortalPages.values(of: ShareLinkBody(link)),
                    "views": views.map { ["at": PortalPages.shown($0.at), "address": $0.addressDigest, "outcome": Self.spoken($0.outcome)] },
                    "hasViews": !views.isEmpty,
                ])
        }
        group.post("shares/{linkId}/revoke") { request, context in
            try await site.submit(request, context, showing: sharesPage) { _ in
                try await shareLinks.revoke(try ShareLinkController.id(context), by: try context.signedInIndividual())
                return PortalForm.redirect(to: "/me/shares")
            }
        }
        group.get("privacy") { _, context in
            let individual = try context.signedInIndividual()
            let body = PrivacyRecordBody(
                try await privacy.record(of: individual), optOut: try await accounts.profile(of: individual).aggregatesOptOut)
            var values = PortalPages.values(of: body) as? [String: Any] ?? [:]
            values["hasOrganisations"] = !body.organisations.isEmpty
            values["hasShareLinks"] = !body.shareLinks.isEmpty
            values["hasAnswers"] = !body.aggregateAnswers.isEmpty
            return try await site.page("me-privacy", title: "Where my data went", context, values: values)
        }
    }

    /// A form's last day of the window, inclusive, as the API's exclusive end: the next midnight.
    static func nextMidnight(_ text: String) -> String {
        guard text.hasSuffix("T23:59:59Z"), let day = RFC3339Timestamp.parse(text) else { return text }
        return WireFormat.timestamp(day.addingTimeInterval(1))
    }

    static func spoken(_ outcome: ShareLinkViewOutcome) -> String {
        switch outcome {
        case .shown: "shown"
        case .wrongPin: "wrong PIN"
        case .locked: "refused: locked"
        }
    }

    private func offersPage(
        _ context: AppRequestContext, search: String?, values: [String: Any] = [:], status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let individual = try context.signedInIndividual()
        let query = search?.trimmingCharacters(in: .whitespaces).prefix(200).description
        let listed = try await directory.listed(matching: query.flatMap { $0.isEmpty ? nil : $0 })
        let mine = try await offers.offers(of: individual)
        var all = values
        all["search"] = query ?? ""
        all["organisations"] = listed.map { PortalPages.values(of: OrganisationProfileBody($0)) }
        all["hasOrganisations"] = !listed.isEmpty
        all["offers"] = mine.map { offer -> Any in
            var shown = PortalPages.values(of: OfferBody(offer, for: .individual)) as? [String: Any] ?? [:]
            shown["open"] = offer.status == .offered
            return shown
        }
        all["hasOffers"] = !mine.isEmpty
        all["kinds"] = DataKind.allWireNames.map { ["name": $0] }
        return try await site.page("me-offers", title: "Offer my data", context, values: all, status: status)
    }

    private func sharesPage(_ context: AppRequestContext, values: [String: Any] = [:], status: HTTPResponse.Status = .ok) async throws -> Response {
        let links = try await shareLinks.links(of: try context.signedInIndividual())
        var all = values
        all["links"] = links.map { link -> Any in
            var shown = PortalPages.values(of: ShareLinkBody(link)) as? [String: Any] ?? [:]
            shown["active"] = (shown["status"] as? String) == "active"
            return shown
        }
        all["hasLinks"] = !links.isEmpty
        all["types"] = SampleType.allCases.filter(\.hasDailyRollup).map {
            ["name": $0.rawValue, "spoken": $0.spokenTitle]
        }
        let day = Date.ISO8601FormatStyle(timeZone: .gmt).year().month().day()
        let now = Date()
        if all["typed"] == nil {
            all["typed"] = [
                "dataFrom": now.addingTimeInterval(-30 * 86_400).formatted(day), "dataTo": now.formatted(day),
                "expiresAt": now.addingTimeInterval(7 * 86_400).formatted(day), "label": "",
            ]
        }
        return try await site.page("me-shares", title: "Share with a doctor", context, values: all, status: status)
    }
}
