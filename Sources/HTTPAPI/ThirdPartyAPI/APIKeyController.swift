import AccessManager
import Data4HelpCore
import Foundation
import Hummingbird
import Logging

/// `/api/thirdparties/keys`: an organisation's long-lived API keys.
struct APIKeyController {
    let keys: APIKeyService
    let body: JSONBody

    func addRoutes(to group: some RouterMethods<ThirdPartyRequestContext>) {
        group.post("keys") { request, context -> EditedResponse<CreatedAPIKeyBody> in
            let form = try await body.decode(APIKeyCreationBody.self, from: request, context: context)
            let created = try await keys.create(for: context.party, name: try form.validated())
            return EditedResponse(
                status: .created,
                headers: [.location: "/api/thirdparties/keys/\(created.record.publicId.wireString)", .cacheControl: "no-store"],
                response: CreatedAPIKeyBody(created)
            )
        }
        group.get("keys") { request, context -> Page<APIKeyBody> in
            let pagination = try KeysetPagination(request)
            let rows = try await keys.list(for: context.party, beforeId: pagination.beforeId, limit: pagination.limit + 1)
            return pagination.page(rows, id: \.id, item: APIKeyBody.init)
        }
        group.get("keys/{keyId}") { _, context in
            try await APIKeyBody(keys.find(for: context.party, publicId: Self.keyId(context)))
        }
        group.delete("keys/{keyId}") { _, context in
            _ = try await keys.revoke(for: context.party, publicId: Self.keyId(context))
            return Response(status: .noContent)
        }
    }

    /// A malformed id names no key of this tenant: 404 like any other unknown key.
    private static func keyId(_ context: ThirdPartyRequestContext) throws -> UUID {
        return try context.parameters.id("keyId", missing: APIKeyError.notFound)
    }
}

struct APIKeyCreationBody: Decodable {
    var name: String?
}

extension APIKeyCreationBody {
    func validated() throws(Problem) -> APIKeyName {
        var fields = FieldValidator()
        let name = fields.required("name", name, APIKeyName.init(parsing:))
        try fields.finish()
        return name!
    }
}

/// A key just created: `key` is the secret, shown this once.
struct CreatedAPIKeyBody: ResponseEncodable {
    let id: String
    let name: String
    let prefix: String
    let key: String
    let createdAt: Date

    init(_ created: CreatedAPIKey) {
        id = created.record.publicId.wireString
        name = created.record.name
        prefix = created.record.prefix
        key = created.key
        createdAt = created.record.createdAt
    }
}

/// A key as listed: its visible prefix and history, never the secret.
struct APIKeyBody: ResponseEncodable, Sendable {
    let id: String
    let name: String
    let prefix: String
    let status: String
    let createdAt: Date
    let lastUsedAt: Date?
    let revokedAt: Date?

    init(_ record: APIKeyRecord) {
        id = record.publicId.wireString
        name = record.name
        prefix = record.prefix
        status = record.revokedAt == nil ? "active" : "revoked"
        createdAt = record.createdAt
        lastUsedAt = record.lastUsedAt
        revokedAt = record.revokedAt
    }
}
