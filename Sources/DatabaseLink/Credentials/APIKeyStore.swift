import Data4HelpCore
import Foundation
import PostgresNIO

/// A live API key found by its hash.
package struct ResolvedAPIKey: Sendable, Equatable {
    package var id: Int64
    package var thirdPartyId: Int64
    package var lastUsedAt: Date?
}

/// The `api_keys` table. Every query of the tenant surface is scoped by `third_party_id`.
package struct APIKeyStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    private typealias Row = (Int64, UUID, String, String, Date, Date?, Date?)
    private static let columns = "id, public_id, name, prefix, created_at, last_used_at, revoked_at"

    private static func record(_ row: Row) -> APIKeyRecord {
        APIKeyRecord(id: row.0, publicId: row.1, name: row.2, prefix: row.3, createdAt: row.4, lastUsedAt: row.5, revokedAt: row.6)
    }

    /// Stores a new key's prefix and hash.
    package func insert(thirdPartyId: Int64, name: String, prefix: String, keyHash: [UInt8]) async throws -> APIKeyRecord {
        let rows = try await database.query(
            """
            INSERT INTO api_keys (third_party_id, name, prefix, key_hash)
            VALUES (\(thirdPartyId), \(name), \(prefix), \(ByteBuffer(bytes: keyHash)))
            RETURNING \(unescaped: Self.columns)
            """)
        return try Self.record(rows[0].decode(Row.self))
    }

    /// The tenant's keys, newest first, older than `beforeId` when given (index: api_keys_third_party_idx).
    package func list(thirdPartyId: Int64, beforeId: Int64?, limit: Int) async throws -> [APIKeyRecord] {
        let rows = try await database.query(
            """
            SELECT \(unescaped: Self.columns) FROM api_keys
            WHERE third_party_id = \(thirdPartyId) AND id < \(beforeId ?? Int64.max)
            ORDER BY id DESC
            LIMIT \(limit)
            """)
        return try rows.map { try Self.record($0.decode(Row.self)) }
    }

    /// One of the tenant's keys.
    package func find(thirdPartyId: Int64, publicId: UUID) async throws -> APIKeyRecord? {
        let rows = try await database.query(
            """
            SELECT \(unescaped: Self.columns) FROM api_keys
            WHERE third_party_id = \(thirdPartyId) AND public_id = \(publicId)
            """)
        return try rows.first.map { try Self.record($0.decode(Row.self)) }
    }

    /// Revokes one of the tenant's keys (idempotent); nil when the tenant has no such key.
    package func revoke(thirdPartyId: Int64, publicId: UUID) async throws -> APIKeyRecord? {
        let rows = try await database.query(
            """
            UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now())
            WHERE third_party_id = \(thirdPartyId) AND public_id = \(publicId)
            RETURNING \(unescaped: Self.columns)
            """)
        let record = try rows.first.map { try Self.record($0.decode(Row.self)) }
        if let record { CredentialRevocations.announce(.apiKey(id: record.id)) }
        return record
    }

    /// The unrevoked key with this hash (index: api_keys_key_hash_key).
    package func resolve(keyHash: [UInt8]) async throws -> ResolvedAPIKey? {
        let rows = try await database.query(
            """
            SELECT id, third_party_id, last_used_at FROM api_keys
            WHERE key_hash = \(ByteBuffer(bytes: keyHash)) AND revoked_at IS NULL
            """)
        return try rows.first.map {
            let row = try $0.decode((Int64, Int64, Date?).self)
            return ResolvedAPIKey(id: row.0, thirdPartyId: row.1, lastUsedAt: row.2)
        }
    }

    /// Records a use; callers throttle it so that a busy key is not written on every request.
    package func touch(id: Int64) async throws {
        try await database.query("UPDATE api_keys SET last_used_at = now() WHERE id = \(id)")
    }
}
