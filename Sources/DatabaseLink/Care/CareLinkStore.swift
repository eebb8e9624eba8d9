import Data4HelpCore
import Foundation
import PostgresNIO

/// `care_links`: who cares for whom. Every statement names the caller — the person by their
/// id, an invitee by their own address, a carer by their id — so another individual's link is
/// simply not found.
package struct CareLinkStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    /// Why an invitation was not stored.
    package enum InviteRefusal: Error, Equatable {
        /// One of the rule ids is not one of the person's rules.
        case unknownRule
        /// That address already has an open invitation or link from the person.
        case alreadyOpen
        /// The person has `maximum` open links.
        case tooMany
        /// The address is the person's own.
        case ownAddress
    }

    /// The select list (alias `l`, the person `p`, the carer `c`).
    static let columns = """
        l.id, l.public_id, p.full_name, l.carer_email, c.full_name, l.sample_types,
        ARRAY(SELECT r.public_id FROM care_link_rules lr JOIN watch_rules r ON r.id = lr.rule_id WHERE lr.link_id = l.id ORDER BY r.id),
        l.status, l.created_at, l.responded_at, l.ended_at, l.ended_by
        """
    static let joins = "JOIN individuals p ON p.id = l.individual_id LEFT JOIN individuals c ON c.id = l.carer_id"

    /// Stores an invitation and queues `mail` to the address, in one transaction (under the
    /// person's ingest lock, so that two requests cannot both take the last place).
    package func invite(
        individualId: Int64, email: String, typeCodes: [Int16], rules: [UUID], maximum: Int, mail: OutboundMessage, mailCap: Int
    ) async throws -> Result<CareLink, InviteRefusal> {
        try await database.withTransaction { connection in
            _ = try await connection.query(
                "SELECT pg_advisory_xact_lock(hashtextextended('data4help.ingest', \(individualId)))", logger: database.logger)
            let counts = try await connection.query(
                """
                SELECT (SELECT count(*) FROM watch_rules WHERE individual_id = \(individualId) AND public_id = ANY (\(rules)::uuid[])),
                       (SELECT count(*) FROM care_links WHERE individual_id = \(individualId) AND status IN ('invited', 'accepted')),
                       (SELECT count(*) FROM care_links
                        WHERE individual_id = \(individualId) AND carer_email = \(email) AND status IN ('invited', 'accepted')),
                       (SELECT email = \(email) FROM individuals WHERE id = \(individualId))
                """, logger: database.logger
            ).collect()
            guard let row = counts.first else { return .failure(.unknownRule) }
            let (ruleCount, open, same, own) = try row.decode((Int64, Int64, Int64, Bool).self)
            if own { return .failure(.ownAddress) }
            if ruleCount != Set(rules).count { return .failure(.unknownRule) }
            if same > 0 { return .failure(.alreadyOpen) }
            if open >= maximum { return .failure(.tooMany) }
            let rows = try await connection.query(
                """
                WITH l AS (
                    INSERT INTO care_links (individual_id, carer_email, sample_types)
                    VALUES (\(individualId), \(email), \(typeCodes)::int2[])
                    RETURNING *
                ),
                chosen AS (
                    INSERT INTO care_link_rules (link_id, rule_id)
                    SELECT l.id, r.id FROM l, watch_rules r WHERE r.individual_id = \(individualId) AND r.public_id = ANY (\(rules)::uuid[])
                    RETURNING rule_id
                )
                SELECT l.id, l.public_id, p.full_name, l.carer_email, NULL::text, l.sample_types,
                       ARRAY(SELECT r.public_id FROM chosen JOIN watch_rules r ON r.id = chosen.rule_id ORDER BY r.id),
                       l.status, l.created_at, l.responded_at, l.ended_at, l.ended_by
                FROM l JOIN individuals p ON p.id = l.individual_id
                """, logger: database.logger
            ).collect()
            guard let inserted = rows.first else { return .failure(.alreadyOpen) }
            try await OutboundMailStore.queue(mail, recipientCap: mailCap, on: connection, logger: database.logger)
            return .success(try Self.link(inserted))
        }
    }

    /// The person's links, newest first.
    package func links(individualId: Int64, limit: Int) async throws -> [CareLink] {
        let rows = try await database.query(
            "SELECT \(unescaped: Self.columns) FROM care_links l \(unescaped: Self.joins) WHERE l.individual_id = \(individualId) ORDER BY l.id DESC LIMIT \(limit)"
        )
        return try rows.map(Self.link)
    }

    /// Ends a link: the person's own (an invitation is withdrawn), or one the carer accepted.
    /// False when the caller is neither; ending a link that is over already changes nothing.
    package func end(_ publicId: UUID, by ender: CareLinkEnder, accountId: Int64) async throws -> Bool {
        let rows = try await database.query(
            """
            WITH link AS (   -- index: care_links_public_id_key
                SELECT id FROM care_links
                WHERE public_id = \(publicId) AND CASE \(ender.rawValue) WHEN 'individual' THEN individual_id ELSE carer_id END = \(accountId)
            ),
            ended AS (
                UPDATE care_links SET status = 'ended', ended_at = clock_timestamp(), ended_by = \(ender.rawValue)
                WHERE id IN (SELECT id FROM link) AND status IN ('invited', 'accepted')
                RETURNING id
            )
            SELECT count(*) FROM link
            """)
        return try rows.first?.decode(Int64.self) == 1
    }

    /// Open invitations to the caller's address (as it is now), newest first.
    package func invitations(carerId: Int64, limit: Int) async throws -> [CareLink] {
        let rows = try await database.query(
            """
            SELECT \(unescaped: Self.columns) FROM care_links l \(unescaped: Self.joins)
            WHERE l.carer_email = (SELECT email FROM individuals WHERE id = \(carerId)) AND l.status = 'invited'
              AND l.individual_id <> \(carerId)
            ORDER BY l.id DESC LIMIT \(limit)
            """)
        return try rows.map(Self.link)
    }

    /// Accepts or declines an open invitation to the caller's address; nil when there is none by
    /// that id (or it is the caller's own).
    package func respond(_ publicId: UUID, carerId: Int64, accept: Bool) async throws -> CareLink? {
        let status = accept ? CareLinkStatus.accepted : .declined
        let rows = try await database.query(
            """
            WITH l AS (
                UPDATE care_links SET status = \(status.rawValue), carer_id = CASE WHEN \(accept) THEN \(carerId) END,
                       responded_at = clock_timestamp()
                WHERE public_id = \(publicId) AND status = 'invited' AND individual_id <> \(carerId)
                  AND carer_email = (SELECT email FROM individuals WHERE id = \(carerId))
                RETURNING *
            )
            SELECT \(unescaped: Self.columns) FROM l \(unescaped: Self.joins)
            """)
        return try rows.first.map(Self.link)
    }

    /// The people the carer cares for, with what each shares: the latest reading of each shared
    /// type and the open (unacknowledged) alerts of the shared rules, newest first, at most
    /// `alertLimit` each. What is shown is written to each person's access log in the same
    /// transaction.
    package func caring(carerId: Int64, limit: Int, alertLimit: Int, typeName: @Sendable (Int16) -> String) async throws -> [CaredFor] {
        try await database.withTransaction { connection in
            let rows = try await connection.query(
                """
                SELECT \(unescaped: Self.columns), l.individual_id FROM care_links l \(unescaped: Self.joins)
                WHERE l.carer_id = \(carerId) AND l.status = 'accepted' ORDER BY l.id DESC LIMIT \(limit)
                """, logger: database.logger
            ).collect()
            var people: [CaredFor] = []
            for row in rows {
                let link = try Self.link(row)
                let individualId = try row.makeRandomAccess()[12].decode(Int64.self)
                let latest = try await connection.query(
                    """
                    SELECT t.code, x.time_ms, x.val FROM unnest(\(link.typeCodes)::int2[]) AS t(code)
                    CROSS JOIN LATERAL (   -- index: sample_blocks_individual_time_idx, newest block first
                        SELECT (extract(epoch FROM b.block_start) * 1000)::int8
                                   + data4help_offset(b.offsets_ms[cardinality(b.vals)], b.offsets_s[cardinality(b.vals)]) AS time_ms,
                               b.vals[cardinality(b.vals)] AS val
                        FROM sample_blocks b WHERE b.individual_id = \(individualId) AND b.sample_type = t.code
                        ORDER BY b.block_start DESC LIMIT 1
                    ) x
                    ORDER BY t.code
                    """, logger: database.logger
                ).collect().map { row in
                    let (code, time, value) = try row.decode((Int16, Int64, Float).self)
                    return LatestReading(typeCode: code, timeMs: time, value: value)
                }
                let alerts = try await connection.query(
                    """
                    SELECT \(unescaped: WatchAlertStore.columns) FROM watch_alerts a JOIN watch_rules r ON r.id = a.rule_id
                    JOIN care_link_rules lr ON lr.rule_id = a.rule_id AND lr.link_id = \(link.sequence)
                    WHERE a.individual_id = \(individualId) AND a.acknowledged_at IS NULL
                    ORDER BY a.id DESC LIMIT \(alertLimit)
                    """, logger: database.logger
                ).collect().map(WatchAlertStore.alert)
                let shown = Set(latest.map(\.typeCode)).union(alerts.map(\.typeCode)).sorted().map(typeName)
                if !shown.isEmpty {
                    try await connection.query(
                        """
                        INSERT INTO disclosures (individual_id, care_link_id, channel, types, item_count)
                        VALUES (\(individualId), \(link.sequence), 'carer', \(shown)::text[], \(latest.count + alerts.count))
                        """, logger: database.logger)
                }
                people.append(CaredFor(link: link, latest: latest, openAlerts: alerts))
            }
            return people
        }
    }

    static func link(_ row: PostgresRow) throws -> CareLink {
        let cells = row.makeRandomAccess()
        func cell<T: PostgresDecodable>(_ index: Int, as type: T.Type = T.self) throws -> T { try cells[index].decode(T.self) }
        guard let status = CareLinkStatus(rawValue: try cell(7, as: String.self)) else { throw StoredValueError(column: "care_links.status") }
        let ender = try cell(11, as: String?.self)
        let endedBy = try ender.map { name in
            guard let ender = CareLinkEnder(rawValue: name) else { throw StoredValueError(column: "care_links.ended_by") }
            return ender
        }
        return CareLink(
            sequence: try cell(0), publicId: try cell(1), personName: try cell(2), carerEmail: try cell(3), carerName: try cell(4),
            typeCodes: try cell(5), rulePublicIds: try cell(6), status: status, createdAt: try cell(8), respondedAt: try cell(9),
            endedAt: try cell(10), endedBy: endedBy)
    }
}
