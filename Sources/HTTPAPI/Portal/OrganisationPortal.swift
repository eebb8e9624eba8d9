import AccessManager
import Foundation
import HealthSharing
import Hummingbird

/// `/portal`: the organisations' portal — sign up as well as in, then keys, requests,
/// aggregates and the webhook.
struct OrganisationPortal {
    let site: PortalSite
    let apiKeys: APIKeyService
    let requests: AccessRequestService
    let grantedData: GrantedDataReader
    let aggregates: AggregateService
    let webhooks: WebhookEndpoints
    let offers: OfferService
    let directory: OrganisationDirectory

    func addRoutes(to router: some RouterMethods<AppRequestContext>) {
        let (open, portal) = site.routes(on: router)
        open.get("signup") { request, _ in
            site.pages.anonymousPage("portal-signup", title: "Sign up", request: request, values: site.headerValues)
        }
        open.post("signup") { request, context in
            var request = request
            let form = try await PortalForm(&request, limit: site.maxBodyBytes)
            try PortalPages.checkAnonymousCSRF(form, request)
            do {
                let receipt = try await site.accounts.registrations.register(try form.decode(ThirdPartyRegistrationBody.self).validated())
                return site.pages.anonymousPage(
                    "portal-check-email", title: "Check your e-mail", request: request,
                    values: site.headerValues.merging(["email": receipt.email]) { $1 })
            } catch {
                let (values, status) = PortalPages.errorValues(error, logger: context.logger)
                return site.pages.anonymousPage(
                    "portal-signup", title: "Sign up", request: request,
                    values: values.merging(site.headerValues) { $1 }.merging(["name": form["name"] ?? "", "email": form["email"] ?? ""]) { $1 },
                    status: status)
            }
        }
        portal.get { _, context in
            try await site.page("portal-home", title: "Overview", context)
        }
        PortalKeyPages(portal: site, keys: apiKeys).addRoutes(to: portal)
        PortalRequestPages(portal: site, requests: requests, grantedData: grantedData).addRoutes(to: portal)
        PortalAggregatePages(portal: site, aggregates: aggregates).addRoutes(to: portal)
        PortalWebhookPages(portal: site, endpoints: webhooks).addRoutes(to: portal)
        PortalOfferPages(portal: site, offers: offers, directory: directory).addRoutes(to: portal)
    }
}
