import Data4HelpCore
import Foundation
import Logging
import PostgresNIO

/// The `individuals` table.
package struct IndividualStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    fileprivate typealias Row = (Int64, UUID, String, String, String, String, String, String, String, Date, Date, Bool, Float?)
    fileprivate static let columns = """
        id, public_id, email, fiscal_code, full_name, birth_date::text, sex, home_area, time_zone, created_at, updated_at, aggregates_opt_out,
        maximum_heart_rate
        """

    private static func record(_ row: Row) -> IndividualRecord {
        IndividualRecord(
            id: row.0, publicId: row.1, email: row.2, fiscalCode: row.3, fullName: row.4, birthDate: row.5,
            sex: row.6, homeArea: row.7, timeZone: row.8, aggregatesOptOut: row.11,
            maximumHeartRate: row.12.map { Double($0.description) ?? Double($0) }, createdAt: row.9, updatedAt: row.10
        )
    }

    /// Inserts the account. A taken email or fiscal code throws `DatabaseFailure.uniqueViolation`.
    package func insert(_ individual: NewIndividual) async throws -> IndividualRecord {
        try await database.withConnection { try await Self.insert(individual, on: $0, logger: database.logger) }
    }

    /// Inserts the account on a connection inside a caller's transaction (a confirmed registration).
    static func insert(_ individual: NewIndividual, on connection: LeasedConnection, logger: Logger) async throws -> IndividualRecord {
        let rows = try await connection.query(
            """
            INSERT INTO individuals (email, password_hash, fiscal_code, full_name, birth_date, sex, home_area)
            VALUES (\(individual.email), \(individual.passwordHash), \(individual.fiscalCode), \(individual.fullName),
                    \(individual.birthDate)::date, \(individual.sex), \(individual.homeArea))
            RETURNING \(unescaped: Self.columns)
            """, logger: logger
        ).collect()
        return try Self.record(rows[0].decode(Row.self))
    }

    /// The account with this internal id (every authenticated read of the person's own profile:
    /// prepared, so it is planned once per connection).
    package func find(id: Int64) async throws -> IndividualRecord? {
        let rows = try await database.withConnection { try await $0.execute(IndividualByIdStatement(id: id), logger: database.logger) }
        return rows.first.map(Self.record)
    }

    /// Id and password hash for a login by email (index: individuals_email_key).
    package func credentials(email: String) async throws -> (id: Int64, passwordHash: String)? {
        let rows = try await database.query("SELECT id, password_hash FROM individuals WHERE email = \(email)")
        return try rows.first.map { try $0.decode((Int64, String).self) }
    }

    /// The stored password hash of this account.
    package func passwordHash(id: Int64) async throws -> String? {
        let rows = try await database.query("SELECT password_hash FROM individuals WHERE id = \(id)")
        return try rows.first.map { try $0.decode(String.self) }
    }

    /// Applies the non-nil changes and returns the updated account, in one transaction with what
    /// they entail: a new time zone rebuilds the daily rollups in it; a password change ends every
    /// login token of the account but `keptTokenId`. Either all of it happens or none.
    package func update(id: Int64, _ changes: IndividualChanges, keptTokenId: Int64? = nil) async throws -> IndividualRecord? {
        let updated: IndividualRecord? = try await database.withTransaction { connection in
            let rows = try await connection.query(
                """
                UPDATE individuals SET
                    email         = COALESCE(\(changes.email), email),
                    full_name     = COALESCE(\(changes.fullName), full_name),
                    birth_date    = COALESCE(\(changes.birthDate)::date, birth_date),
                    sex           = COALESCE(\(changes.sex), sex),
                    home_area     = COALESCE(\(changes.homeArea), home_area),
                    time_zone     = COALESCE(\(changes.timeZone), time_zone),
                    password_hash = COALESCE(\(changes.passwordHash), password_hash),
                    aggregates_opt_out = COALESCE(\(changes.aggregatesOptOut), aggregates_opt_out),
                    maximum_heart_rate = CASE WHEN \(changes.maximumHeartRate != nil) THEN \(changes.maximumHeartRate.flatMap { $0 })::real
                                              ELSE maximum_heart_rate END,
                    updated_at    = now()
                WHERE id = \(id)
                RETURNING \(unescaped: Self.columns)
                """, logger: database.logger
            ).collect()
            guard let row = rows.first else { return nil }
            if changes.timeZone != nil {
                // Daily rollups are days in the individual's zone: recount them in the new one.
                _ = try await connection.query("SELECT data4help_rebuild_rollups(\(id))", logger: database.logger)
            }
            if changes.passwordHash != nil {
                _ = try await connection.query(
                    """
                    UPDATE access_tokens SET revoked_at = now()
                    WHERE individual_id = \(id) AND revoked_at IS NULL AND id IS DISTINCT FROM \(keptTokenId)
                    """, logger: database.logger)
            }
            return try Self.record(row.decode(Row.self))
        }
        // A new password ended the other sessions: this instance's caches forget them now.
        if updated != nil, changes.passwordHash != nil { CredentialRevocations.announce(.account(.individual(id))) }
        return updated
    }

    /// Deletes the account and, through the foreign keys' cascades, everything that belongs to it:
    /// tokens, samples, location fixes, rollups, data events. In the same transaction every active
    /// grant is first revoked, so each party is told (`grant.revoked`) to delete what it holds;
    /// those events outlive the account (their `individual_id` becomes NULL).
    package func delete(id: Int64) async throws -> Bool {
        let deleted: Bool = try await database.withTransaction { connection in
            let granted = try await connection.query(
                """
                SELECT id FROM access_requests WHERE individual_id = \(id) AND status = 'granted' FOR UPDATE
                """, logger: database.logger
            ).collect().map { try $0.decode(Int64.self) }
            try await AccessRequestStore.setStatus(ids: granted, status: .revoked, actor: "individual", on: connection, logger: database.logger)
            _ = try await connection.query(
                """
                DELETE FROM party_events WHERE individual_id = \(id) AND event_type IN ('data.created', 'data.imported')
                """, logger: database.logger)
            // Nothing keeps the person's id: out of every released answer's population (GIN index).
            _ = try await connection.query(
                """
                UPDATE aggregate_populations SET members = array_remove(members, \(id)::int8) WHERE members @> ARRAY[\(id)]::int8[]
                """, logger: database.logger)
            let rows = try await connection.query("DELETE FROM individuals WHERE id = \(id) RETURNING id", logger: database.logger).collect()
            return !rows.isEmpty
        }
        if deleted { CredentialRevocations.announce(.account(.individual(id))) }
        return deleted
    }
}

/// `IndividualStore.find(id:)`.
private struct IndividualByIdStatement: PostgresPreparedStatement {
    static let name = "data4help_individual_by_id"
    static let sql = "SELECT \(IndividualStore.columns) FROM individuals WHERE id = $1"
    typealias Row = IndividualStore.Row
    let id: Int64
    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        bindings.append(id)
        return bindings
    }
    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}
