import AccessManager
import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird

/// `/portal/offers` (what individuals offered the organisation: accept — it becomes a grant — or
/// decline) and `/portal/profile` (what the organisation tells people about itself, and whether
/// it is listed in the directory individuals search).
struct PortalOfferPages {
    let portal: PortalSite
    let offers: OfferService
    let directory: OrganisationDirectory

    func addRoutes(to group: some RouterMethods<AppRequestContext>) {
        group.get("offers") { _, context in try await offersPage(context) }
        for (action, accept) in [("accept", true), ("decline", false)] {
            group.post("offers/{offerId}/\(action)") { request, context in
                try await portal.submit(request, context, showing: offersPage) { _ in
                    let offer = try await offers.answer(try OfferFields.offerId(context.parameters), by: try context.signedInParty(), accept: accept)
                    return PortalForm.redirect(to: offer.grantPublicId.map { "/portal/requests/\($0.wireString)" } ?? "/portal/offers")
                }
            }
        }
        group.get("profile") { _, context in try await profilePage(context) }
        group.post("profile") { request, context in
            try await portal.submit(request, context, keeping: ["purpose", "privacyContact", "website"], showing: profilePage) { form in
                let website = form["website"]?.trimmingCharacters(in: .whitespaces)
                let profile = try OrganisationProfileForm(
                    listed: form["listed"] != nil, purpose: form["purpose"], privacyContact: form["privacyContact"],
                    website: (website?.isEmpty ?? true) ? nil : website
                ).validated()
                _ = try await directory.publish(profile, by: try context.signedInParty())
                return PortalForm.redirect(to: "/portal/profile")
            }
        }
        group.post("profile/remove") { request, context in
            try await portal.submit(request, context, showing: profilePage) { _ in
                _ = try await directory.withdraw(by: try context.signedInParty())
                return PortalForm.redirect(to: "/portal/profile")
            }
        }
    }

    private func offersPage(_ context: AppRequestContext, values: [String: Any] = [:], status: HTTPResponse.Status = .ok) async throws -> Response {
        let received = try await offers.offers(to: try context.signedInParty(), status: nil, beforeId: nil, limit: 200)
        var all = values
        all["offers"] = received.map { offer -> Any in
            var shown = PortalPages.values(of: OfferBody(offer, for: .thirdParty)) as? [String: Any] ?? [:]
            shown["open"] = offer.status == .offered
            return shown
        }
        all["hasOffers"] = !received.isEmpty
        return try await portal.page("portal-offers", title: "Offers", context, values: all, status: status)
    }

    private func profilePage(_ context: AppRequestContext, values: [String: Any] = [:], status: HTTPResponse.Status = .ok) async throws -> Response {
        var all = values
        if let profile = try await directory.profile(of: try context.signedInParty()) {
            all["profile"] = PortalPages.values(of: OrganisationProfileBody(profile))
            if all["typed"] == nil {
                all["typed"] = ["purpose": profile.purpose, "privacyContact": profile.privacyContact, "website": profile.website ?? ""]
            }
            all["listed"] = profile.listed
        }
        return try await portal.page("portal-profile", title: "Public profile", context, values: all, status: status)
    }
}
