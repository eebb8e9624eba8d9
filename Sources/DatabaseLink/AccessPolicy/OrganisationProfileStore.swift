import Data4HelpCore
import Foundation
import PostgresNIO

/// `organisation_profiles`: what organisations publish about themselves, and the directory of
/// those that chose to be listed.
package struct OrganisationProfileStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    private static let columns = "p.public_id, p.name, o.listed, o.purpose, o.privacy_contact, o.website, o.updated_at"

    static func profile(_ row: PostgresRow) throws -> OrganisationProfile {
        let r = try row.decode((UUID, String, Bool, String, String, String?, Date).self)
        return OrganisationProfile(
            organisationPublicId: r.0, name: r.1, listed: r.2, purpose: r.3, privacyContact: r.4, website: r.5, updatedAt: r.6)
    }

    /// The organisation's own profile, nil until it published one.
    package func profile(thirdPartyId: Int64) async throws -> OrganisationProfile? {
        let rows = try await database.query(
            """
            SELECT \(unescaped: Self.columns) FROM organisation_profiles o JOIN third_parties p ON p.id = o.third_party_id
            WHERE o.third_party_id = \(thirdPartyId)
            """)
        return try rows.first.map(Self.profile)
    }

    /// Publishes (or replaces) the organisation's profile.
    package func save(
        thirdPartyId: Int64, listed: Bool, purpose: String, privacyContact: String, website: String?
    ) async throws -> OrganisationProfile {
        let rows = try await database.query(
            """
            WITH saved AS (
                INSERT INTO organisation_profiles (third_party_id, listed, purpose, privacy_contact, website)
                VALUES (\(thirdPartyId), \(listed), \(purpose), \(privacyContact), \(website))
                ON CONFLICT (third_party_id) DO UPDATE
                    SET listed = EXCLUDED.listed, purpose = EXCLUDED.purpose, privacy_contact = EXCLUDED.privacy_contact,
                        website = EXCLUDED.website, updated_at = now()
                RETURNING *
            )
            SELECT \(unescaped: Self.columns) FROM saved o JOIN third_parties p ON p.id = o.third_party_id
            """)
        return try Self.profile(rows[0])
    }

    /// Withdraws the profile (and so the listing).
    package func remove(thirdPartyId: Int64) async throws -> Bool {
        !(try await database.query("DELETE FROM organisation_profiles WHERE third_party_id = \(thirdPartyId) RETURNING 1")).isEmpty
    }

    /// Listed organisations whose name contains `search` (any case), in name order.
    package func directory(search: String?, limit: Int) async throws -> [OrganisationProfile] {
        let rows = try await database.query(
            """
            SELECT \(unescaped: Self.columns) FROM organisation_profiles o JOIN third_parties p ON p.id = o.third_party_id
            WHERE o.listed   -- index: organisation_profiles_listed_idx
              AND (\(search)::text IS NULL OR strpos(lower(p.name), lower(\(search)::text)) > 0)
            ORDER BY lower(p.name), p.public_id LIMIT \(limit)
            """)
        return try rows.map(Self.profile)
    }

    /// A listed organisation's profile.
    package func listed(publicId: UUID) async throws -> OrganisationProfile? {
        let rows = try await database.query(
            """
            SELECT \(unescaped: Self.columns) FROM organisation_profiles o JOIN third_parties p ON p.id = o.third_party_id
            WHERE p.public_id = \(publicId) AND o.listed
            """)
        return try rows.first.map(Self.profile)
    }
}
