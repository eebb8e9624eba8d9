import Data4HelpCore
import Foundation
import Logging
import PostgresNIO

/// `data_offers`: what individuals offer organisations. Every statement names the caller — the
/// person by their id, an organisation by its id — so another's offer is simply not found.
/// A new offer is an `offer.received` event for the organisation. Accepting writes the grant (`access_requests`, `granted` at once, with its history, whose
/// trigger tells the organisation `request.granted`) in the same transaction as the answer.
package struct DataOfferStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    /// Why an offer was not stored.
    package enum OfferRefusal: Error, Equatable {
        case unknownOrganisation
        /// The person has an open offer to that organisation.
        case alreadyOpen
        /// The person has `maximum` open offers.
        case tooMany
    }

    /// The outcome of answering or withdrawing an offer.
    package enum Outcome: Sendable, Equatable {
        case changed(DataOffer)
        case notFound
        /// Not open any more; its status.
        case wrongState(OfferStatus)
    }

    /// The effective status: an open offer past its expiry, or whose access would already have
    /// ended, reads `expired`.
    private static let effectiveStatus = """
        CASE WHEN f.status = 'offered' AND (f.expires_at <= now() OR f.access_until <= now()) THEN 'expired' ELSE f.status END
        """

    private static let select = """
        SELECT f.id, f.public_id, f.individual_id, i.full_name, i.fiscal_code, p.public_id, p.name, f.message, f.types,
               f.data_from, f.data_to, f.access_until, f.subscribe, \(effectiveStatus), f.created_at, f.expires_at, f.decided_at,
               r.public_id
        FROM data_offers f JOIN individuals i ON i.id = f.individual_id JOIN third_parties p ON p.id = f.third_party_id
        LEFT JOIN access_requests r ON r.id = f.request_id
        """

    private typealias Row = (
        Int64, UUID, Int64, String, String, UUID, String, String, [String], Date?, Date?, Date?, Bool, String, Date, Date, Date?, UUID?
    )

    private static func offer(_ row: PostgresRow) throws -> DataOffer {
        let r = try row.decode(Row.self)
        guard let status = OfferStatus(rawValue: r.13) else { throw StoredValueError(column: "data_offers.status") }
        return DataOffer(
            sequence: r.0, publicId: r.1, individualId: r.2, personName: r.3, fiscalCode: r.4, organisationPublicId: r.5,
            organisationName: r.6, message: r.7, scope: AccessScopeRecord(types: r.8, dataFrom: r.9, dataTo: r.10, until: r.11),
            subscribe: r.12, status: status, createdAt: r.14, expiresAt: r.15, decidedAt: r.16, grantPublicId: r.17)
    }

    /// Stores an open offer, under the person's ingest lock (two requests cannot both take the
    /// last place). An earlier open offer to the same organisation that lapsed is recorded expired first.
    package func create(
        individualId: Int64, organisation: UUID, message: String, scope: AccessScopeRecord, subscribe: Bool, expiresAt: Date, maximum: Int
    ) async throws -> Result<DataOffer, OfferRefusal> {
        let logger = database.logger
        return try await database.withTransaction { connection in
            let party = try await connection.query("SELECT id FROM third_parties WHERE public_id = \(organisation)", logger: logger).collect()
            guard let partyId = try party.first?.decode(Int64.self) else { return .failure(.unknownOrganisation) }
            _ = try await connection.query(
                "SELECT pg_advisory_xact_lock(hashtextextended('data4help.ingest', \(individualId)))", logger: logger)
            let counts = try await connection.query(
                """
                WITH lapsed AS (
                    UPDATE data_offers SET status = 'expired'
                    WHERE individual_id = \(individualId) AND status = 'offered' AND (expires_at <= now() OR access_until <= now())
                    RETURNING id
                )
                SELECT count(*) FILTER (WHERE f.id NOT IN (SELECT id FROM lapsed)),
                       count(*) FILTER (WHERE f.third_party_id = \(partyId) AND f.id NOT IN (SELECT id FROM lapsed))
                FROM data_offers f WHERE f.individual_id = \(individualId) AND f.status = 'offered'
                """, logger: logger
            ).collect()
            let (open, same) = try counts[0].decode((Int64, Int64).self)
            if same > 0 { return .failure(.alreadyOpen) }
            if open >= maximum { return .failure(.tooMany) }
            let rows = try await connection.query(
                """
                INSERT INTO data_offers (individual_id, third_party_id, message, types, data_from, data_to, access_until, subscribe, expires_at)
                VALUES (\(individualId), \(partyId), \(message), \(scope.types)::text[], \(scope.dataFrom), \(scope.dataTo), \(scope.until),
                        \(subscribe), \(expiresAt))
                RETURNING id
                """, logger: logger
            ).collect()
            let id = try rows[0].decode(Int64.self)
            // The organisation hears of it by its usual channels (its trigger queues the webhook).
            _ = try await connection.query(
                """
                INSERT INTO party_events (third_party_id, offer_id, individual_id, event_type)
                VALUES (\(partyId), \(id), \(individualId), 'offer.received')
                """, logger: logger)
            return .success(try await Self.load(id: id, on: connection, logger: logger)!)
        }
    }

    /// The person's offers, newest first (index: data_offers_individual_idx).
    package func listForIndividual(individualId: Int64, limit: Int) async throws -> [DataOffer] {
        try await database.query(
            "\(unescaped: Self.select) WHERE f.individual_id = \(individualId) ORDER BY f.id DESC LIMIT \(limit)"
        ).map(Self.offer)
    }

    /// The organisation's offers, newest first, of one effective status when given (index: data_offers_third_party_idx).
    package func listForParty(thirdPartyId: Int64, status: OfferStatus?, beforeId: Int64?, limit: Int) async throws -> [DataOffer] {
        try await database.query(
            """
            \(unescaped: Self.select)
            WHERE f.third_party_id = \(thirdPartyId) AND f.id < \(beforeId ?? Int64.max)
              AND (\(status?.rawValue)::text IS NULL OR \(unescaped: Self.effectiveStatus) = \(status?.rawValue)::text)
            ORDER BY f.id DESC LIMIT \(limit)
            """
        ).map(Self.offer)
    }

    package func findForIndividual(individualId: Int64, publicId: UUID) async throws -> DataOffer? {
        try await database.query("\(unescaped: Self.select) WHERE f.individual_id = \(individualId) AND f.public_id = \(publicId)")
            .first.map(Self.offer)
    }

    package func findForParty(thirdPartyId: Int64, publicId: UUID) async throws -> DataOffer? {
        try await database.query("\(unescaped: Self.select) WHERE f.third_party_id = \(thirdPartyId) AND f.public_id = \(publicId)")
            .first.map(Self.offer)
    }

    /// The person takes back an open offer.
    package func withdraw(individualId: Int64, publicId: UUID) async throws -> Outcome {
        try await withOpenOffer(owner: "individual_id", ownerId: individualId, publicId: publicId) { id, connection in
            _ = try await connection.query(
                "UPDATE data_offers SET status = 'withdrawn', decided_at = now() WHERE id = \(id)", logger: database.logger)
        }
    }

    /// The organisation answers an open offer. Accepted, the offer becomes a grant of exactly
    /// what was offered (its `asked` scope is the offer, so the person may later narrow it, or
    /// extend it back within the offer), `granted` from now.
    package func answer(thirdPartyId: Int64, publicId: UUID, accept: Bool) async throws -> Outcome {
        try await withOpenOffer(owner: "third_party_id", ownerId: thirdPartyId, publicId: publicId) { id, connection in
            guard accept else {
                _ = try await connection.query(
                    "UPDATE data_offers SET status = 'declined', decided_at = now() WHERE id = \(id)", logger: database.logger)
                return
            }
            _ = try await connection.query(
                """
                WITH granted AS (
                    INSERT INTO access_requests (third_party_id, fiscal_code, purpose, subscribe, types, data_from, data_to, access_until,
                                                 expires_at, status, decided_at, individual_id, granted_types, granted_from, granted_to,
                                                 granted_until, offer_id)
                    SELECT f.third_party_id, i.fiscal_code, f.message, f.subscribe, f.types, f.data_from, f.data_to, f.access_until,
                           now(), 'granted', now(), f.individual_id, f.types, f.data_from, f.data_to, f.access_until, f.id
                    FROM data_offers f JOIN individuals i ON i.id = f.individual_id WHERE f.id = \(id)
                    RETURNING id, granted_types, granted_from, granted_to, granted_until
                ),
                offered AS (
                    INSERT INTO access_request_history (request_id, status, actor) SELECT id, 'pending', 'individual' FROM granted
                ),
                accepted AS (
                    UPDATE data_offers SET status = 'accepted', decided_at = now(), request_id = (SELECT id FROM granted) WHERE id = \(id)
                )
                SELECT id FROM granted
                """, logger: database.logger)
            // A second statement, so that its history row comes after the 'pending' one (the
            // trigger then writes the organisation's request.granted event).
            _ = try await connection.query(
                """
                INSERT INTO access_request_history (request_id, status, actor, granted_types, granted_from, granted_to, granted_until)
                SELECT r.id, 'granted', 'third_party', r.granted_types, r.granted_from, r.granted_to, r.granted_until
                FROM access_requests r WHERE r.offer_id = \(id)
                """, logger: database.logger)
        }
    }

    /// Runs `write` on an open offer of the caller's, locked, in one transaction; answers the
    /// offer as `write` left it.
    private func withOpenOffer(
        owner column: StaticString, ownerId: Int64, publicId: UUID, _ write: (_ id: Int64, _ connection: LeasedConnection) async throws -> Void
    ) async throws -> Outcome {
        let logger = database.logger
        return try await database.withTransaction { connection in
            let rows = try await connection.query(
                """
                SELECT f.id, \(unescaped: Self.effectiveStatus) FROM data_offers f
                WHERE f.\(unescaped: column.description) = \(ownerId) AND f.public_id = \(publicId) FOR UPDATE
                """, logger: logger
            ).collect()
            guard let (id, raw) = try rows.first?.decode((Int64, String).self) else { return .notFound }
            guard let status = OfferStatus(rawValue: raw) else { throw StoredValueError(column: "data_offers.status") }
            guard status == .offered else { return .wrongState(status) }
            try await write(id, connection)
            return .changed(try await Self.load(id: id, on: connection, logger: logger)!)
        }
    }

    private static func load(id: Int64, on connection: LeasedConnection, logger: Logger) async throws -> DataOffer? {
        try await connection.query("\(unescaped: select) WHERE f.id = \(id)", logger: logger).collect().first.map(offer)
    }
}
