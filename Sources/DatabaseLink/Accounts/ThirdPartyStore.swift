import Data4HelpCore
import Foundation
import Logging
import PostgresNIO

/// The `third_parties` table: one row per tenant.
package struct ThirdPartyStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    private typealias Row = (Int64, UUID, String, String, Date)
    private static let columns = "id, public_id, name, email, created_at"

    /// Inserts the organisation. A taken email throws `DatabaseFailure.uniqueViolation`.
    package func insert(name: String, email: String, passwordHash: String) async throws -> ThirdPartyRecord {
        try await database.withConnection {
            try await Self.insert(name: name, email: email, passwordHash: passwordHash, on: $0, logger: database.logger)
        }
    }

    /// Inserts the organisation on a connection inside a caller's transaction (a confirmed registration).
    static func insert(
        name: String, email: String, passwordHash: String, on connection: LeasedConnection, logger: Logger
    ) async throws -> ThirdPartyRecord {
        let rows = try await connection.query(
            """
            INSERT INTO third_parties (name, email, password_hash)
            VALUES (\(name), \(email), \(passwordHash))
            RETURNING \(unescaped: Self.columns)
            """, logger: logger
        ).collect()
        let row = try rows[0].decode(Row.self)
        return ThirdPartyRecord(id: row.0, publicId: row.1, name: row.2, email: row.3, createdAt: row.4)
    }

    /// The organisation with this internal id.
    package func find(id: Int64) async throws -> ThirdPartyRecord? {
        let rows = try await database.query("SELECT \(unescaped: Self.columns) FROM third_parties WHERE id = \(id)")
        return try rows.first.map {
            let row = try $0.decode(Row.self)
            return ThirdPartyRecord(id: row.0, publicId: row.1, name: row.2, email: row.3, createdAt: row.4)
        }
    }

    /// Id and password hash for a login by email (index: third_parties_email_key).
    package func credentials(email: String) async throws -> (id: Int64, passwordHash: String)? {
        let rows = try await database.query("SELECT id, password_hash FROM third_parties WHERE email = \(email)")
        return try rows.first.map { try $0.decode((Int64, String).self) }
    }
}
