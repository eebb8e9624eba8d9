import Data4HelpCore
import Foundation
import PostgresNIO

/// A live token found by its hash.
package struct ResolvedAccessToken: Sendable, Equatable {
    package var id: Int64
    package var owner: AccountReference
    package var lastUsedAt: Date?
    package var expiresAt: Date
}

/// The `access_tokens` table. Tokens are looked up by the SHA-256 of the presented secret.
package struct AccessTokenStore: Sendable {
    /// Where a login token or API key that stops working is announced (migration 0042; payload:
    /// the hex of its SHA-256).
    package static let credentialsChannel = "data4help_credentials"

    let database: Database

    package init(database: Database) {
        self.database = database
    }

    private typealias Row = (Int64, UUID, Date, Date, Date?)

    /// Stores a new token's hash.
    package func insert(owner: AccountReference, tokenHash: [UInt8], expiresAt: Date) async throws -> AccessTokenRecord {
        let rows = try await database.query(
            """
            INSERT INTO access_tokens (individual_id, third_party_id, token_hash, expires_at)
            VALUES (\(owner.individualId), \(owner.thirdPartyId), \(ByteBuffer(bytes: tokenHash)), \(expiresAt))
            RETURNING id, public_id, created_at, expires_at, last_used_at
            """)
        let row = try rows[0].decode(Row.self)
        return AccessTokenRecord(id: row.0, publicId: row.1, createdAt: row.2, expiresAt: row.3, lastUsedAt: row.4)
    }

    /// The unrevoked, unexpired token with this hash (index: access_tokens_token_hash_key).
    package func resolve(tokenHash: [UInt8]) async throws -> ResolvedAccessToken? {
        let rows = try await database.query(
            """
            SELECT id, individual_id, third_party_id, last_used_at, expires_at FROM access_tokens
            WHERE token_hash = \(ByteBuffer(bytes: tokenHash)) AND revoked_at IS NULL AND expires_at > now()
            """)
        guard let row = try rows.first?.decode((Int64, Int64?, Int64?, Date?, Date).self) else { return nil }
        let owner: AccountReference = if let individual = row.1 { .individual(individual) } else { .thirdParty(row.2 ?? 0) }
        return ResolvedAccessToken(id: row.0, owner: owner, lastUsedAt: row.3, expiresAt: row.4)
    }

    /// Records a use; callers throttle it so that a busy token is not written on every request.
    package func touch(id: Int64) async throws {
        try await database.query("UPDATE access_tokens SET last_used_at = now() WHERE id = \(id)")
    }

    /// The owner's live tokens, newest first, older than `beforeId` when given
    /// (index: access_tokens_individual_idx / access_tokens_third_party_idx).
    package func list(owner: AccountReference, beforeId: Int64?, limit: Int) async throws -> [AccessTokenRecord] {
        let rows = try await database.query(
            """
            SELECT id, public_id, created_at, expires_at, last_used_at FROM access_tokens
            WHERE \(unescaped: owner.ownerColumn) = \(owner.accountId)
              AND revoked_at IS NULL AND expires_at > now()
              AND id < \(beforeId ?? Int64.max)
            ORDER BY id DESC
            LIMIT \(limit)
            """)
        return try rows.map {
            let row = try $0.decode(Row.self)
            return AccessTokenRecord(id: row.0, publicId: row.1, createdAt: row.2, expiresAt: row.3, lastUsedAt: row.4)
        }
    }

    /// Revokes one of the owner's live tokens; false when the owner has no such live token.
    package func revoke(owner: AccountReference, publicId: UUID) async throws -> Bool {
        let rows = try await database.query(
            """
            UPDATE access_tokens SET revoked_at = now()
            WHERE public_id = \(publicId)
              AND \(unescaped: owner.ownerColumn) = \(owner.accountId)
              AND revoked_at IS NULL AND expires_at > now()
            RETURNING id
            """)
        for row in rows { CredentialRevocations.announce(.accessToken(id: try row.decode(Int64.self))) }
        return !rows.isEmpty
    }

    /// Revokes a token by internal id (logout of the token in use).
    package func revoke(id: Int64) async throws {
        try await database.query("UPDATE access_tokens SET revoked_at = now() WHERE id = \(id) AND revoked_at IS NULL")
        CredentialRevocations.announce(.accessToken(id: id))
    }

    /// Deletes tokens that expired or were revoked before the cut-off; returns how many.
    package func purge(endedBefore cutoff: Date) async throws -> Int {
        let rows = try await database.query(
            """
            DELETE FROM access_tokens WHERE expires_at < \(cutoff) OR revoked_at < \(cutoff) RETURNING id
            """)
        return rows.count
    }
}
