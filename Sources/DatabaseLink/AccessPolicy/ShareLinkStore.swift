import Data4HelpCore
import Foundation
import Logging
import PostgresNIO

/// `share_links` and `share_link_views`. The owner's statements name the owner; an opening
/// names only the token's SHA-256, so what a visitor can reach is exactly one link.
package struct ShareLinkStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    /// A link as an opening finds it, before any PIN is checked.
    package struct Opening: Sendable {
        package var link: ShareLink
        package var pinHash: String?
        /// The owner's name, shown to the visitor once the link opens.
        package var ownerName: String
    }

    static let columns = """
        s.id, s.public_id, s.individual_id, s.label, s.sample_types, s.data_from, s.data_to, s.expires_at, s.pin_hash IS NOT NULL,
        s.failed_pins, s.created_at, s.revoked_at,
        (SELECT count(*) FROM share_link_views v WHERE v.link_id = s.id AND v.outcome = 'shown'),
        (SELECT max(v.at) FROM share_link_views v WHERE v.link_id = s.id AND v.outcome = 'shown')
        """

    private typealias Row = (Int64, UUID, Int64, String, [Int16], Date, Date, Date, Bool, Int32, Date, Date?, Int64, Date?)

    private static func link(_ row: PostgresRow) throws -> ShareLink {
        let r = try row.decode(Row.self)
        return ShareLink(
            sequence: r.0, publicId: r.1, individualId: r.2, label: r.3, typeCodes: r.4, dataFrom: r.5, dataTo: r.6, expiresAt: r.7,
            hasPin: r.8, failedPins: Int(r.9), createdAt: r.10, revokedAt: r.11, views: Int(r.12), lastViewedAt: r.13)
    }

    /// Stores a link; nil when the person already has `maximum` links that still open.
    package func create(
        individualId: Int64, tokenHash: [UInt8], label: String, typeCodes: [Int16], dataFrom: Date, dataTo: Date, expiresAt: Date,
        pinHash: String?, maximum: Int
    ) async throws -> ShareLink? {
        let logger = database.logger
        return try await database.withTransaction { connection in
            _ = try await connection.query(
                "SELECT pg_advisory_xact_lock(hashtextextended('data4help.ingest', \(individualId)))", logger: logger)
            let open = try await connection.query(
                """
                SELECT count(*) FROM share_links
                WHERE individual_id = \(individualId) AND revoked_at IS NULL AND expires_at > now()
                """, logger: logger
            ).collect()
            guard try open[0].decode(Int64.self) < maximum else { return nil }
            let rows = try await connection.query(
                """
                INSERT INTO share_links (individual_id, token_hash, label, sample_types, data_from, data_to, expires_at, pin_hash)
                VALUES (\(individualId), \(ByteBuffer(bytes: tokenHash)), \(label), \(typeCodes)::int2[], \(dataFrom), \(dataTo),
                        \(expiresAt), \(pinHash))
                RETURNING id
                """, logger: logger
            ).collect()
            let id = try rows[0].decode(Int64.self)
            return try await connection.query("SELECT \(unescaped: Self.columns) FROM share_links s WHERE s.id = \(id)", logger: logger)
                .collect().first.map(Self.link)
        }
    }

    /// The person's links, newest first (index: share_links_individual_idx).
    package func links(individualId: Int64, limit: Int) async throws -> [ShareLink] {
        try await database.query(
            "SELECT \(unescaped: Self.columns) FROM share_links s WHERE s.individual_id = \(individualId) ORDER BY s.id DESC LIMIT \(limit)"
        ).map(Self.link)
    }

    /// One of the person's links and its openings, newest first.
    package func link(individualId: Int64, publicId: UUID, viewLimit: Int) async throws -> (ShareLink, [ShareLinkView])? {
        try await database.withConnection { connection in
            let rows = try await connection.query(
                """
                SELECT \(unescaped: Self.columns) FROM share_links s WHERE s.individual_id = \(individualId) AND s.public_id = \(publicId)
                """, logger: database.logger
            ).collect()
            guard let link = try rows.first.map(Self.link) else { return nil }
            let views = try await connection.query(
                """
                SELECT link_id, \(unescaped: Self.viewColumns) FROM share_link_views
                WHERE link_id = \(link.sequence) ORDER BY id DESC LIMIT \(viewLimit)
                """, logger: database.logger
            ).collect()
            return (link, try views.map { try Self.view($0).view })
        }
    }

    /// Every link of the person with every opening of each, newest first — two statements however
    /// many links (the export).
    package func linksWithViews(individualId: Int64) async throws -> [(link: ShareLink, views: [ShareLinkView])] {
        try await database.withConnection { connection in
            let links = try await connection.query(
                "SELECT \(unescaped: Self.columns) FROM share_links s WHERE s.individual_id = \(individualId) ORDER BY s.id DESC",
                logger: database.logger
            ).collect().map(Self.link)
            guard !links.isEmpty else { return [] }
            let rows = try await connection.query(
                """
                SELECT link_id, \(unescaped: Self.viewColumns) FROM share_link_views
                WHERE link_id = ANY(\(links.map(\.sequence))) ORDER BY id DESC
                """, logger: database.logger
            ).collect()
            var views: [Int64: [ShareLinkView]] = [:]
            for row in rows {
                let (link, view) = try Self.view(row)
                views[link, default: []].append(view)
            }
            return links.map { (link: $0, views: views[$0.sequence] ?? []) }
        }
    }

    private static let viewColumns = "at, encode(substring(address_digest FROM 1 FOR 8), 'hex'), outcome"

    private static func view(_ row: PostgresRow) throws -> (link: Int64, view: ShareLinkView) {
        let (link, at, digest, outcome) = try row.decode((Int64, Date, String, String).self)
        guard let outcome = ShareLinkViewOutcome(rawValue: outcome) else { throw StoredValueError(column: "share_link_views.outcome") }
        return (link, ShareLinkView(at: at, addressDigest: digest, outcome: outcome))
    }

    /// Revokes one of the person's links (at once: the next opening finds nothing); false when
    /// there is no such link. Revoking a revoked link changes nothing.
    package func revoke(individualId: Int64, publicId: UUID) async throws -> Bool {
        !(try await database.query(
            """
            UPDATE share_links SET revoked_at = COALESCE(revoked_at, now())
            WHERE individual_id = \(individualId) AND public_id = \(publicId) RETURNING id
            """)).isEmpty
    }

    /// The link the token's hash names, when it still opens (not revoked, not expired).
    package func opening(tokenHash: [UInt8]) async throws -> Opening? {
        let rows = try await database.query(
            """
            SELECT \(unescaped: Self.columns), s.pin_hash, i.full_name FROM share_links s JOIN individuals i ON i.id = s.individual_id
            WHERE s.token_hash = \(ByteBuffer(bytes: tokenHash)) AND s.revoked_at IS NULL AND s.expires_at > now()
            """)
        guard let row = rows.first else { return nil }
        let cells = row.makeRandomAccess()
        return Opening(link: try Self.link(row), pinHash: try cells[14].decode(String?.self), ownerName: try cells[15].decode(String.self))
    }

    /// Records an opening. A wrong PIN also counts against the link (answering the count now);
    /// a view that showed data is also a disclosure in the owner's access log.
    @discardableResult
    package func recordView(_ link: ShareLink, address: String, outcome: ShareLinkViewOutcome, itemCount: Int, types: [String]) async throws -> Int {
        let logger = database.logger
        return try await database.withTransaction { connection in
            _ = try await connection.query(
                """
                INSERT INTO share_link_views (link_id, address_digest, outcome)
                SELECT \(link.sequence), sha256(secret || convert_to(\(address), 'UTF8')), \(outcome.rawValue)
                FROM server_secrets WHERE name = 'share-link-address'
                """, logger: logger)
            switch outcome {
            case .shown:
                _ = try await connection.query(
                    """
                    INSERT INTO disclosures (individual_id, share_link_id, channel, types, item_count)
                    VALUES (\(link.individualId), \(link.sequence), 'share_link', \(types)::text[], \(itemCount))
                    """, logger: logger)
                return link.failedPins
            case .wrongPin:
                let rows = try await connection.query(
                    "UPDATE share_links SET failed_pins = failed_pins + 1 WHERE id = \(link.sequence) RETURNING failed_pins", logger: logger
                ).collect()
                return Int(try rows[0].decode(Int32.self))
            case .locked:
                return link.failedPins
            }
        }
    }
}
