import Data4HelpCore
import Foundation
import Logging
import PostgresNIO

/// `access_requests`, `access_request_history` and `blocked_parties`.
///
/// A party reads only its own requests (scoped by `third_party_id`); an individual reads only
/// those naming their fiscal code. Every state change writes a history row in the same
/// transaction.
package struct AccessRequestStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    private static let columns = """
        r.id, r.public_id, r.third_party_id, p.public_id, p.name, r.fiscal_code, r.purpose, r.subscribe,
        access_request_effective_status(r.status, r.expires_at, r.granted_until) AS effective_status,
        r.types, r.data_from, r.data_to, r.access_until,
        r.granted_types, r.granted_from, r.granted_to, r.granted_until,
        r.individual_id, r.created_at, r.expires_at, r.decided_at, r.offer_id IS NOT NULL,
        o.listed, o.purpose, o.privacy_contact, o.website, o.updated_at
        """
    /// The tables of `columns`: the request, its organisation and that one's profile, if published.
    private static let tables = """
        access_requests r JOIN third_parties p ON p.id = r.third_party_id
        LEFT JOIN organisation_profiles o ON o.third_party_id = r.third_party_id
        """

    private typealias Row = (
        Int64, UUID, Int64, UUID, String, String, String, Bool, AccessStatus,
        [String], Date?, Date?, Date?, [String]?, Date?, Date?, Date?, Int64?, Date, Date, Date?, Bool,
        Bool?, String?, String?, String?, Date?
    )

    private static func record(_ row: PostgresRow) throws -> AccessRequestRecord {
        let r = try row.decode(Row.self)
        return AccessRequestRecord(
            id: r.0, publicId: r.1, thirdPartyId: r.2, organisationPublicId: r.3, organisationName: r.4,
            fiscalCode: r.5, purpose: r.6, subscribe: r.7, status: r.8,
            asked: AccessScopeRecord(types: r.9, dataFrom: r.10, dataTo: r.11, until: r.12),
            granted: r.13.map { AccessScopeRecord(types: $0, dataFrom: r.14, dataTo: r.15, until: r.16) },
            individualId: r.17, createdAt: r.18, expiresAt: r.19, decidedAt: r.20, offered: r.21,
            organisationProfile: r.23.map { purpose in
                OrganisationProfile(
                    organisationPublicId: r.3, name: r.4, listed: r.22 ?? false, purpose: purpose, privacyContact: r.24 ?? "", website: r.25,
                    updatedAt: r.26 ?? r.18)
            }
        )
    }

    /// Stores a request, `pending`. One from a party the person has blocked is withheld: the party
    /// sees exactly what a request to an unknown fiscal code shows, the person nothing (not listed,
    /// not decidable, not announced); it lapses at its expiry. Any other is announced to the
    /// person's registered device with the message `notice` makes of it, in the same transaction.
    /// A second pending request of the party for the same fiscal code throws a unique violation.
    package func create(
        _ request: NewAccessRequest, notice: (AccessRequestRecord) throws -> OutboxMessage
    ) async throws -> AccessRequestRecord {
        let logger = database.logger
        return try await database.withTransaction { connection in
            // A pending request that has lapsed no longer stands in the way of a new one.
            _ = try await connection.query(
                """
                WITH lapsed AS (
                    UPDATE access_requests SET status = 'expired'
                    WHERE third_party_id = \(request.thirdPartyId) AND fiscal_code = \(request.fiscalCode)
                      AND access_request_lapsed(status, expires_at)
                \(unescaped: Self.expiredTail)
                """, logger: logger)
            let rows = try await connection.query(
                """
                WITH blocked AS (
                    SELECT EXISTS (
                        SELECT 1 FROM blocked_parties b JOIN individuals i ON i.id = b.individual_id
                        WHERE i.fiscal_code = \(request.fiscalCode) AND b.third_party_id = \(request.thirdPartyId)
                    ) AS yes
                ),
                inserted AS (
                    INSERT INTO access_requests (third_party_id, fiscal_code, purpose, subscribe, types, data_from, data_to,
                                                 access_until, expires_at, status, withheld)
                    SELECT \(request.thirdPartyId), \(request.fiscalCode), \(request.purpose), \(request.subscribe),
                           \(request.scope.types)::text[], \(request.scope.dataFrom), \(request.scope.dataTo), \(request.scope.until),
                           \(request.expiresAt), 'pending', blocked.yes
                    FROM blocked
                    RETURNING id, withheld
                ),
                history AS (
                    INSERT INTO access_request_history (request_id, status, actor)
                    SELECT id, 'pending', 'third_party' FROM inserted
                )
                SELECT n.id, n.withheld, (SELECT id FROM individuals WHERE fiscal_code = \(request.fiscalCode)) FROM inserted n
                """, logger: logger
            ).collect()
            let (id, withheld, individualId) = try rows[0].decode((Int64, Bool, Int64?).self)
            let record = try await Self.load(id: id, on: connection, logger: logger)!
            // The individual's device hears of it, when they registered one. The statement runs
            // whoever the code names (row id 0 is no one's), so the answer takes the same
            // statements whether or not the fiscal code has an account.
            let recipient = withheld ? 0 : individualId ?? 0
            try await WebhookOutbox.enqueue(
                try notice(record), to: .endpoint(of: .individual(recipient)), requestId: id, on: connection, logger: logger)
            return record
        }
    }

    /// The party's requests, newest first, optionally of one effective status.
    package func listForParty(thirdPartyId: Int64, status: AccessStatus?, beforeId: Int64?, limit: Int) async throws -> [AccessRequestRecord] {
        try await list(owner: .thirdParty(thirdPartyId), status: status, beforeId: beforeId, limit: limit)
    }

    /// One of the party's requests, with its history.
    package func findForParty(thirdPartyId: Int64, publicId: UUID) async throws -> AccessRequestRecord? {
        try await database.withConnection { connection in
            let rows = try await connection.query(
                """
                SELECT id FROM access_requests WHERE third_party_id = \(thirdPartyId) AND public_id = \(publicId)
                """, logger: database.logger
            ).collect()
            guard let id = try rows.first?.decode(Int64.self) else { return nil }
            return try await Self.load(id: id, on: connection, logger: database.logger)
        }
    }

    /// The requests naming the individual's fiscal code, newest first (index: access_requests_fiscal_code_idx).
    package func listForIndividual(individualId: Int64, status: AccessStatus?, beforeId: Int64?, limit: Int) async throws -> [AccessRequestRecord] {
        try await list(owner: .individual(individualId), status: status, beforeId: beforeId, limit: limit)
    }

    /// One request naming the individual, with its history.
    package func findForIndividual(individualId: Int64, publicId: UUID) async throws -> AccessRequestRecord? {
        try await database.withConnection { connection in
            guard let id = try await Self.idForIndividual(individualId, publicId, lock: false, on: connection, logger: database.logger) else {
                return nil
            }
            return try await Self.load(id: id, on: connection, logger: database.logger)
        }
    }

    /// Accepts (with the given grant) or denies a pending request naming the individual.
    /// `decide` sees the request and returns the grant, nil to deny; it may throw to refuse.
    package func decide(
        individualId: Int64, publicId: UUID, _ decide: (AccessRequestRecord) throws -> AccessScopeRecord?
    ) async throws -> AccessRequestStoreOutcome {
        try await withRequest(individualId: individualId, publicId: publicId, in: .pending) { current, id, connection in
            let grant = try decide(current)
            let status: AccessStatus = grant == nil ? .denied : .granted
            _ = try await connection.query(
                """
                WITH changed AS (
                    UPDATE access_requests SET status = \(status), decided_at = now(), individual_id = \(grant == nil ? nil : individualId),
                           granted_types = \(grant?.types)::text[], granted_from = \(grant?.dataFrom), granted_to = \(grant?.dataTo),
                           granted_until = \(grant?.until)
                    WHERE id = \(id)
                \(unescaped: Self.individualsChangeTail)
                """, logger: database.logger)
        }
    }

    /// Changes an active grant naming the individual: `change` gets the request as it stands and
    /// answers the new scope and whether the subscription stays on (it may throw to refuse). The
    /// change is a history row (so the organisation gets `grant.changed`), in one transaction;
    /// one that leaves the grant as it was writes nothing.
    package func change(
        individualId: Int64, publicId: UUID, _ change: (AccessRequestRecord) throws -> (scope: AccessScopeRecord, subscribe: Bool)
    ) async throws -> AccessRequestStoreOutcome {
        try await withRequest(individualId: individualId, publicId: publicId, in: .granted) { current, id, connection in
            let (grant, subscribe) = try change(current)
            // A change that changes nothing (a form sent as it was shown) records nothing.
            guard grant != current.granted || subscribe != current.subscribe else { return }
            _ = try await connection.query(
                """
                WITH changed AS (
                    UPDATE access_requests SET granted_types = \(grant.types)::text[], granted_from = \(grant.dataFrom),
                           granted_to = \(grant.dataTo), granted_until = \(grant.until), subscribe = \(subscribe)
                    WHERE id = \(id)
                \(unescaped: Self.individualsChangeTail)
                """, logger: database.logger)
        }
    }

    /// Ends an active grant naming the individual.
    package func revoke(individualId: Int64, publicId: UUID) async throws -> AccessRequestStoreOutcome {
        try await withRequest(individualId: individualId, publicId: publicId, in: .granted) { _, id, connection in
            try await Self.setStatus(ids: [id], status: .revoked, actor: "individual", on: connection, logger: database.logger)
        }
    }

    /// The end of an individual's `UPDATE access_requests … WHERE` in a `changed` CTE: the
    /// history row of the change (its trigger writes the organisation's event).
    private static let individualsChangeTail = """
            RETURNING id, status, granted_types, granted_from, granted_to, granted_until
        )
        INSERT INTO access_request_history (request_id, status, actor, granted_types, granted_from, granted_to, granted_until)
        SELECT id, status, 'individual', granted_types, granted_from, granted_to, granted_until FROM changed
        """

    /// Runs `write` on a request naming the individual, locked, in one transaction, when it is in
    /// `state`; answers the request as `write` left it.
    private func withRequest(
        individualId: Int64, publicId: UUID, in state: AccessStatus,
        _ write: (_ current: AccessRequestRecord, _ id: Int64, _ connection: LeasedConnection) async throws -> Void
    ) async throws -> AccessRequestStoreOutcome {
        let logger = database.logger
        return try await database.withTransaction { connection in
            guard let id = try await Self.idForIndividual(individualId, publicId, lock: true, on: connection, logger: logger),
                let current = try await Self.load(id: id, on: connection, logger: logger)
            else { return .notFound }
            guard current.status == state else { return .wrongState(current.status) }
            try await write(current, id, connection)
            return .changed(try await Self.load(id: id, on: connection, logger: logger)!)
        }
    }

    /// Blocks an organisation (by its public id): its pending requests are denied and its active
    /// grants revoked, now; later requests are withheld (see `create`). False when there is no such party.
    package func block(individualId: Int64, organisation: UUID) async throws -> Bool {
        let logger = database.logger
        return try await database.withTransaction { connection in
            let party = try await connection.query("SELECT id FROM third_parties WHERE public_id = \(organisation)", logger: logger).collect()
            guard let partyId = try party.first?.decode(Int64.self) else { return false }
            _ = try await connection.query(
                """
                INSERT INTO blocked_parties (individual_id, third_party_id) VALUES (\(individualId), \(partyId))
                ON CONFLICT DO NOTHING
                """, logger: logger)
            let affected = try await connection.query(
                """
                SELECT r.id, r.status FROM access_requests r
                WHERE r.third_party_id = \(partyId)
                  AND r.fiscal_code = (SELECT fiscal_code FROM individuals WHERE id = \(individualId))
                  AND r.status IN ('pending', 'granted')
                FOR UPDATE
                """, logger: logger
            ).collect()
            let rows = try affected.map { try $0.decode((Int64, AccessStatus).self) }
            try await Self.setStatus(
                ids: rows.filter { $0.1 == .pending }.map(\.0), status: .denied, actor: "individual", on: connection, logger: logger)
            try await Self.setStatus(
                ids: rows.filter { $0.1 == .granted }.map(\.0), status: .revoked, actor: "individual", on: connection, logger: logger)
            return true
        }
    }

    /// Unblocks an organisation; false when it was not blocked.
    package func unblock(individualId: Int64, organisation: UUID) async throws -> Bool {
        let rows = try await database.query(
            """
            DELETE FROM blocked_parties b USING third_parties p
            WHERE b.third_party_id = p.id AND p.public_id = \(organisation) AND b.individual_id = \(individualId)
            RETURNING b.third_party_id
            """)
        return !rows.isEmpty
    }

    /// The organisations the individual has blocked, most recent first.
    package func blocked(individualId: Int64) async throws -> [(organisation: UUID, name: String, since: Date)] {
        let rows = try await database.query(
            """
            SELECT p.public_id, p.name, b.blocked_at FROM blocked_parties b JOIN third_parties p ON p.id = b.third_party_id
            WHERE b.individual_id = \(individualId) ORDER BY b.blocked_at DESC
            """)
        return try rows.map { try $0.decode((UUID, String, Date).self) }.map { ($0.0, $0.1, $0.2) }
    }

    // MARK: - Helpers

    /// Newest first, of one effective status when given. A party's requests are those it filed
    /// (index: access_requests_third_party_idx); an individual's, those naming their fiscal code
    /// (index: access_requests_fiscal_code_idx). The filter is a constant; the id is bound.
    private func list(owner: AccountReference, status: AccessStatus?, beforeId: Int64?, limit: Int) async throws -> [AccessRequestRecord] {
        let (before, after) =
            switch owner {
            case .thirdParty: ("r.third_party_id = ", "")
            case .individual: ("NOT r.withheld AND r.fiscal_code = (SELECT fiscal_code FROM individuals WHERE id = ", ")")
            }
        let rows = try await database.query(
            """
            SELECT * FROM (
                SELECT \(unescaped: Self.columns) FROM \(unescaped: Self.tables)
                WHERE \(unescaped: before)\(owner.accountId)\(unescaped: after) AND r.id < \(beforeId ?? Int64.max)
            ) listed
            WHERE \(status)::text IS NULL OR listed.effective_status = \(status)
            ORDER BY listed.id DESC LIMIT \(limit)
            """)
        return try rows.map(Self.record)
    }

    private static func idForIndividual(
        _ individualId: Int64, _ publicId: UUID, lock: Bool, on connection: LeasedConnection, logger: Logger
    ) async throws -> Int64? {
        let rows = try await connection.query(
            """
            SELECT r.id FROM access_requests r
            WHERE r.public_id = \(publicId) AND NOT r.withheld
              AND r.fiscal_code = (SELECT fiscal_code FROM individuals WHERE id = \(individualId))
            \(unescaped: lock ? "FOR UPDATE" : "")
            """, logger: logger
        ).collect()
        return try rows.first?.decode(Int64.self)
    }

    private static func load(id: Int64, on connection: LeasedConnection, logger: Logger) async throws -> AccessRequestRecord? {
        let rows = try await connection.query(
            """
            SELECT \(unescaped: columns) FROM \(unescaped: tables) WHERE r.id = \(id)
            """, logger: logger
        ).collect()
        guard var record = try rows.first.map(Self.record) else { return nil }
        let history = try await connection.query(
            """
            SELECT at, status, actor FROM access_request_history WHERE request_id = \(id) ORDER BY id
            """, logger: logger
        ).collect()
        record.history = try history.map { try $0.decode((Date, AccessStatus, String).self) }.map {
            AccessRequestChange(at: $0.0, status: $0.1, actor: $0.2)
        }
        return record
    }

    /// Moves up to `limit` requests whose time is up to `expired` (pending ones past their expiry,
    /// grants past their end), with history and events; returns how many. Reads already treat
    /// them as expired; this makes it a recorded change the party is told about.
    package func expireLapsed(limit: Int = 1_000) async throws -> Int {
        let rows = try await database.query(
            """
            WITH lapsed AS (   -- index: access_requests_lapse_idx, access_requests_grant_end_idx
                UPDATE access_requests SET status = 'expired'
                WHERE id IN (SELECT id FROM access_requests WHERE access_request_lapsed(status, expires_at)
                             UNION ALL
                             SELECT id FROM access_requests WHERE access_grant_lapsed(status, granted_until)
                             LIMIT \(limit))
            \(unescaped: Self.expiredTail)
            """)
        return try rows.first?.decode(Int.self) ?? 0
    }

    /// The end of an expiring `UPDATE` named `lapsed`: its history rows (which become the
    /// party's events), and the count.
    private static let expiredTail = """
        RETURNING id),
        history AS (INSERT INTO access_request_history (request_id, status, actor) SELECT id, 'expired', 'system' FROM lapsed)
        SELECT count(*) FROM lapsed
        """

    /// Moves the requests to `status`, appending their history (which makes the parties' events).
    static func setStatus(ids: [Int64], status: AccessStatus, actor: String, on connection: LeasedConnection, logger: Logger) async throws {
        guard !ids.isEmpty else { return }
        _ = try await connection.query(
            """
            WITH changed AS (
                UPDATE access_requests SET status = \(status), decided_at = COALESCE(decided_at, now())
                WHERE id = ANY (\(ids)::int8[])
                RETURNING id, status
            )
            INSERT INTO access_request_history (request_id, status, actor) SELECT id, status, \(actor) FROM changed
            """, logger: logger)
    }
}
