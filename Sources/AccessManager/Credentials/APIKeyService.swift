import Data4HelpCore
import DatabaseLink
import Foundation

/// An API key just created: the only time its secret exists outside the client.
package struct CreatedAPIKey: Sendable {
    package let key: String
    package let record: APIKeyRecord
}

/// Why an API key operation was refused.
package enum APIKeyError: Error, Equatable {
    /// The tenant has no key with that id (another tenant's key is "no such key" too).
    case notFound
}

/// A third party's long-lived API keys. Every operation is scoped by the caller's tenant.
package struct APIKeyService: Sendable {
    let store: APIKeyStore

    package init(database: Database) {
        self.store = APIKeyStore(database: database)
    }

    /// A new key for the caller's organisation.
    package func create(for party: ThirdPartyID, name: APIKeyName) async throws -> CreatedAPIKey {
        let tenant = party.rowId
        let (key, prefix) = BearerSecret.newAPIKey()
        let record = try await store.insert(thirdPartyId: tenant, name: name.value, prefix: prefix, keyHash: BearerSecret.digest(key))
        return CreatedAPIKey(key: key, record: record)
    }

    /// The organisation's keys, revoked ones included, newest first.
    package func list(for party: ThirdPartyID, beforeId: Int64?, limit: Int) async throws -> [APIKeyRecord] {
        try await store.list(thirdPartyId: party.rowId, beforeId: beforeId, limit: limit)
    }

    /// One of the organisation's keys.
    package func find(for party: ThirdPartyID, publicId: UUID) async throws -> APIKeyRecord {
        guard let record = try await store.find(thirdPartyId: party.rowId, publicId: publicId) else {
            throw APIKeyError.notFound
        }
        return record
    }

    /// Revokes one of the organisation's keys; revoking twice is harmless.
    package func revoke(for party: ThirdPartyID, publicId: UUID) async throws -> APIKeyRecord {
        guard let record = try await store.revoke(thirdPartyId: party.rowId, publicId: publicId) else {
            throw APIKeyError.notFound
        }
        return record
    }
}

/// A label the organisation gives a key ("production", "ci"): 1–100 characters.
package struct APIKeyName: Sendable, Hashable {
    package let value: String

    package init(parsing raw: String) throws(InvalidValue) {
        self.value = try raw.trimmedName(length: 1...100)
    }
}
