import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird

/// `/api/thirdparties/offers` (offers made to the organisation: read, accept, decline) and
/// `/api/thirdparties/me/profile` (what it publishes about itself, and whether it is listed).
struct OfferController {
    let offers: OfferService
    let directory: OrganisationDirectory
    let body: JSONBody

    func addRoutes(to group: some RouterMethods<ThirdPartyRequestContext>) {
        group.get("offers") { request, context -> Page<OfferBody> in
            var fields = FieldValidator()
            let status: OfferStatus? = AccessScopeFields.status(request, fields: &fields)
            try fields.finish()
            let pagination = try KeysetPagination(request)
            let rows = try await offers.offers(to: context.party, status: status, beforeId: pagination.beforeId, limit: pagination.limit + 1)
            return pagination.page(rows, id: \.sequence) { OfferBody($0, for: .thirdParty) }
        }
        group.get("offers/{offerId}") { _, context in
            OfferBody(try await offers.offer(to: context.party, id: OfferFields.offerId(context.parameters)), for: .thirdParty)
        }
        for (action, accept) in [("accept", true), ("decline", false)] {
            group.post("offers/{offerId}/\(action)") { _, context in
                OfferBody(try await offers.answer(OfferFields.offerId(context.parameters), by: context.party, accept: accept), for: .thirdParty)
            }
        }
    }

    /// The profile is part of managing the account: a login token, not an API key.
    func addProfileRoutes(to group: some RouterMethods<ThirdPartyRequestContext>) {
        group.get("me/profile") { _, context -> OrganisationProfileBody in
            guard let profile = try await directory.profile(of: context.party) else { throw Problem.notFound("profile") }
            return OrganisationProfileBody(profile)
        }
        group.put("me/profile") { request, context in
            let form = try await body.decode(OrganisationProfileForm.self, from: request, context: context)
            return OrganisationProfileBody(try await directory.publish(form.validated(), by: context.party))
        }
        group.delete("me/profile") { _, context -> HTTPResponse.Status in
            guard try await directory.withdraw(by: context.party) else { throw Problem.notFound("profile") }
            return .noContent
        }
    }
}
