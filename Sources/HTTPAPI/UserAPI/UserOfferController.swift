import AccessManager
import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird

/// `/api/users/organisations` (the directory of listed organisations) and `/api/users/offers`
/// (offer chosen data to an organisation, follow and withdraw offers). Another person's offer is 404.
struct UserOfferController {
    let offers: OfferService
    let directory: OrganisationDirectory
    let body: JSONBody

    func addRoutes(to group: some RouterMethods<IndividualRequestContext>) {
        group.get("organisations") { request, _ -> ItemList<OrganisationProfileBody> in
            var fields = FieldValidator()
            let search = fields.optional("q", request.uri.queryParameters["q"].map(String.init)) { (raw: String) throws(InvalidValue) in
                let trimmed = raw.trimmingCharacters(in: .whitespaces)
                guard trimmed.count <= 200, !trimmed.containsControlCharacter else {
                    throw InvalidValue("must be at most 200 characters of text")
                }
                return trimmed
            }
            try fields.finish()
            return ItemList(items: try await directory.listed(matching: search.flatMap { $0.isEmpty ? nil : $0 }).map(OrganisationProfileBody.init))
        }
        group.get("organisations/{organisationId}") { _, context -> OrganisationProfileBody in
            guard let id = context.parameters.get("organisationId", as: UUID.self), let profile = try await directory.listed(id) else {
                throw Problem.notFound("organisation")
            }
            return OrganisationProfileBody(profile)
        }
        group.get("offers") { _, context in
            ItemList(items: try await offers.offers(of: context.individual).map { OfferBody($0, for: .individual) })
        }
        group.post("offers") { request, context -> EditedResponse<OfferBody> in
            let form = try await body.decode(OfferForm.self, from: request, context: context)
            let offer = try await offers.offer(form.validated(), by: context.individual)
            return EditedResponse(
                status: .created, headers: [.location: "/api/users/offers/\(offer.publicId.wireString)"], response: OfferBody(offer, for: .individual)
            )
        }
        group.get("offers/{offerId}") { _, context in
            OfferBody(try await offers.offer(of: context.individual, id: OfferFields.offerId(context.parameters)), for: .individual)
        }
        group.post("offers/{offerId}/withdraw") { _, context in
            OfferBody(try await offers.withdraw(OfferFields.offerId(context.parameters), by: context.individual), for: .individual)
        }
    }
}
