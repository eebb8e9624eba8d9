import AccessManager
import Data4HelpCore
import Foundation
import Hummingbird

/// `/portal/keys`: an organisation's API keys — created (the key shown once), listed, revoked.
struct PortalKeyPages {
    let portal: PortalSite

    let keys: APIKeyService

    func addRoutes(to group: some RouterMethods<AppRequestContext>) {
        group.get("keys") { _, context in
            try await page(context)
        }
        group.post("keys") { request, context in
            try await portal.submit(request, context, showing: page) { form in
                let created = try await keys.create(for: try context.signedInParty(), name: try form.decode(APIKeyCreationBody.self).validated())
                return try await page(context, values: ["created": ["name": created.record.name, "key": created.key]], status: .created)
            }
        }
        group.post("keys/{keyId}/revoke") { request, context in
            try await portal.submit(request, context, showing: page) { _ in
                let id = try context.parameters.id("keyId", missing: APIKeyError.notFound)
                _ = try await keys.revoke(for: try context.signedInParty(), publicId: id)
                return PortalForm.redirect(to: "/portal/keys")
            }
        }
    }

    private func page(_ context: AppRequestContext, values: [String: Any] = [:], status: HTTPResponse.Status = .ok) async throws -> Response {
        let rows = try await keys.list(for: try context.signedInParty(), beforeId: nil, limit: 100)
        let listed: [[String: Any]] = rows.map { key in
            [
                "id": key.publicId.wireString, "name": key.name, "prefix": key.prefix,
                "createdAt": PortalPages.shown(key.createdAt), "lastUsedAt": key.lastUsedAt.map(PortalPages.shown) ?? "never",
                "revoked": key.revokedAt != nil,
            ]
        }
        return try await portal.page(
            "portal-keys", title: "API keys", context, values: values.merging(["keys": listed, "hasKeys": !listed.isEmpty]) { $1 }, status: status)
    }
}
