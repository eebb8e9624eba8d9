import AccessManager
import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird

/// `/portal/webhook`: an organisation's webhook — its URL, the signing secret (shown once, when
/// set or rotated), a test event, and the delivery log with each attempt and a redeliver button.
struct PortalWebhookPages {
    let portal: PortalSite

    let endpoints: WebhookEndpoints

    func addRoutes(to group: some RouterMethods<AppRequestContext>) {
        group.get("webhook") { _, context in
            try await page(context)
        }
        group.post("webhook") { request, context in
            try await portal.submit(request, context, showing: page) { form in
                let (_, secret) = try await endpoints.register(
                    try context.signedIn().account, url: try form.decode(WebhookEndpointForm.self).validated())
                return try await page(context, values: secret.map { ["secret": $0] } ?? ["saved": true], status: secret == nil ? .ok : .created)
            }
        }
        group.post("webhook/secret") { request, context in
            try await action(request, context) {
                try await page(context, values: ["secret": try await endpoints.rotateSecret(try context.signedIn().account)])
            }
        }
        group.post("webhook/remove") { request, context in
            try await action(request, context) {
                try await endpoints.remove(try context.signedIn().account)
                return PortalForm.redirect(to: "/portal/webhook")
            }
        }
        group.post("webhook/test") { request, context in
            try await action(request, context) {
                _ = try await endpoints.sendTest(try context.signedIn().account)
                return PortalForm.redirect(to: "/portal/webhook")
            }
        }
        group.post("webhook/deliveries/{deliveryId}/redeliver") { request, context in
            try await action(request, context) {
                let id = try context.parameters.id("deliveryId", missing: WebhookError.notFound)
                _ = try await endpoints.redeliver(try context.signedIn().account, id: id)
                return PortalForm.redirect(to: "/portal/webhook")
            }
        }
    }

    /// A button's action; a refusal shows on the page.
    private func action(_ request: Request, _ context: AppRequestContext, _ body: () async throws -> Response) async throws -> Response {
        try await portal.submit(request, context, showing: page) { _ in
            try await body()
        }
    }

    private func page(_ context: AppRequestContext, values: [String: Any] = [:], status: HTTPResponse.Status = .ok) async throws -> Response {
        let owner = try context.signedIn().account
        let endpoint: WebhookEndpointRecord?
        do {
            endpoint = try await endpoints.endpoint(owner)
        } catch WebhookError.notFound {
            endpoint = nil
        }
        let deliveries = try await endpoints.deliveries(owner, beforeId: nil, limit: 50).map { delivery -> [String: Any] in
            let last = delivery.attempts.last
            return [
                "id": delivery.publicId.wireString, "eventType": delivery.eventType, "status": delivery.state,
                "createdAt": PortalPages.shown(delivery.createdAt), "attempts": delivery.attempts.count,
                "lastResult": last.map { $0.statusCode.map { "HTTP \($0)" } ?? ($0.error ?? "no answer") } ?? "not tried yet",
                "nextAttemptAt": delivery.nextAttemptAt.map(PortalPages.shown) ?? "",
            ]
        }
        var all = values
        if let endpoint { all["endpoint"] = ["url": endpoint.url, "updatedAt": PortalPages.shown(endpoint.updatedAt)] }
        all["url"] = all["url"] ?? endpoint?.url ?? ""
        all["deliveries"] = deliveries
        all["hasDeliveries"] = !deliveries.isEmpty
        return try await portal.page("portal-webhook", title: "Webhook", context, values: all, status: status)
    }
}

extension WebhookEndpointForm {
    func validated() throws(Problem) -> String {
        var fields = FieldValidator()
        let url = fields.required("url", url) { (text: String) throws(InvalidValue) in text }
        try fields.finish()
        return url!
    }
}
