import Data4HelpCore
import Foundation
import Logging
import PostgresNIO

/// What a registration waits to become once its e-mail is confirmed: an individual or an organisation.
package enum PendingAccount: Sendable {
    /// The individual's account as it will be inserted (`NewIndividual.email`/`passwordHash` included).
    case individual(NewIndividual)
    case thirdParty(name: String, email: String, passwordHash: String)

    package var email: String {
        switch self {
        case .individual(let individual): individual.email
        case .thirdParty(_, let email, _): email
        }
    }
}

/// A message for the outbound-mail outbox.
package struct OutboundMessage: Sendable, Equatable {
    package var recipient: String
    package var subject: String
    package var body: String

    package init(recipient: String, subject: String, body: String) {
        self.recipient = recipient
        self.subject = subject
        self.body = body
    }
}

/// Who already holds what a registration asks for (read before the answer is chosen; never shown
/// to the registrant, only used to pick which message goes to which mailbox).
package struct RegistrationHolders: Sendable, Equatable {
    /// The registration's e-mail already has an account on this surface.
    package var emailRegistered: Bool
    /// The e-mail of the individual who holds the registration's fiscal code, if another does.
    package var fiscalCodeHolderEmail: String?
}

/// The `pending_registrations` table and the mail that goes with a registration: a registration
/// is stored with the messages it causes in one transaction, and becomes an account in one
/// transaction that also consumes it.
package struct RegistrationStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    /// Whether an individual's e-mail or fiscal code is taken (indexes: the two unique keys).
    package func individualHolders(email: String, fiscalCode: String) async throws -> RegistrationHolders {
        let rows = try await database.query(
            """
            SELECT EXISTS (SELECT 1 FROM individuals WHERE email = \(email)),
                   (SELECT email FROM individuals WHERE fiscal_code = \(fiscalCode) AND email <> \(email))
            """)
        let (registered, holder) = try rows[0].decode((Bool, String?).self)
        return RegistrationHolders(emailRegistered: registered, fiscalCodeHolderEmail: holder)
    }

    /// Whether an organisation's e-mail is taken.
    package func thirdPartyHolders(email: String) async throws -> RegistrationHolders {
        let rows = try await database.query("SELECT EXISTS (SELECT 1 FROM third_parties WHERE email = \(email))")
        return RegistrationHolders(emailRegistered: try rows[0].decode(Bool.self), fiscalCodeHolderEmail: nil)
    }

    /// Stores the registration (when there is one to confirm) and queues its messages, in one
    /// transaction. A recipient who was already sent `recipientCap` messages in the last hour is
    /// sent no more: the answer stays the same, so the cap tells nobody anything.
    package func record(
        _ pending: PendingAccount?, tokenDigest: [UInt8], expiresAt: Date, messages: [OutboundMessage], recipientCap: Int
    ) async throws {
        try await database.withTransaction { connection in
            if let pending { try await Self.insert(pending, tokenDigest: tokenDigest, expiresAt: expiresAt, on: connection, logger: database.logger) }
            for message in messages {
                try await OutboundMailStore.queue(message, recipientCap: recipientCap, on: connection, logger: database.logger)
            }
        }
    }

    private static func insert(
        _ pending: PendingAccount, tokenDigest: [UInt8], expiresAt: Date, on connection: LeasedConnection, logger: Logger
    ) async throws {
        switch pending {
        case .individual(let person):
            _ = try await connection.query(
                """
                INSERT INTO pending_registrations
                    (token_digest, surface, email, password_hash, fiscal_code, full_name, birth_date, sex, home_area, expires_at)
                VALUES (\(ByteBuffer(bytes: tokenDigest)), 'individual', \(person.email), \(person.passwordHash), \(person.fiscalCode), \(person.fullName),
                        \(person.birthDate)::date, \(person.sex), \(person.homeArea), \(expiresAt))
                """, logger: logger)
        case .thirdParty(let name, let email, let passwordHash):
            _ = try await connection.query(
                """
                INSERT INTO pending_registrations (token_digest, surface, email, password_hash, organisation, expires_at)
                VALUES (\(ByteBuffer(bytes: tokenDigest)), 'thirdParty', \(email), \(passwordHash), \(name), \(expiresAt))
                """, logger: logger)
        }
    }

    /// Turns the unexpired individual registration with this token into an account, consuming it
    /// and every other registration waiting for the same address. Nil when there is none; a
    /// taken e-mail or fiscal code throws `DatabaseFailure.uniqueViolation` and consumes nothing.
    package func confirmIndividual(tokenDigest: [UInt8]) async throws -> IndividualRecord? {
        try await database.withTransaction { connection in
            let rows = try await connection.query(
                """
                DELETE FROM pending_registrations
                WHERE token_digest = \(ByteBuffer(bytes: tokenDigest)) AND surface = 'individual' AND expires_at > now()
                RETURNING email, password_hash, fiscal_code, full_name, birth_date::text, sex, home_area
                """, logger: database.logger
            ).collect()  // index: pending_registrations_token_digest_key
            guard let row = rows.first else { return nil }
            let (email, hash, code, name, birth, sex, area) = try row.decode((String, String, String, String, String, String, String).self)
            _ = try await connection.query(
                """
                DELETE FROM pending_registrations WHERE email = \(email) AND surface = 'individual'
                """, logger: database.logger)
            return try await IndividualStore.insert(
                NewIndividual(email: email, passwordHash: hash, fiscalCode: code, fullName: name, birthDate: birth, sex: sex, homeArea: area),
                on: connection, logger: database.logger
            )
        }
    }

    /// Turns the unexpired organisation registration with this token into an account, as
    /// `confirmIndividual` does.
    package func confirmThirdParty(tokenDigest: [UInt8]) async throws -> ThirdPartyRecord? {
        try await database.withTransaction { connection in
            let rows = try await connection.query(
                """
                DELETE FROM pending_registrations
                WHERE token_digest = \(ByteBuffer(bytes: tokenDigest)) AND surface = 'thirdParty' AND expires_at > now()
                RETURNING email, password_hash, organisation
                """, logger: database.logger
            ).collect()
            guard let row = rows.first else { return nil }
            let (email, hash, name) = try row.decode((String, String, String).self)
            _ = try await connection.query(
                """
                DELETE FROM pending_registrations WHERE email = \(email) AND surface = 'thirdParty'
                """, logger: database.logger)
            return try await ThirdPartyStore.insert(name: name, email: email, passwordHash: hash, on: connection, logger: database.logger)
        }
    }

    /// Deletes registrations that expired unconfirmed (they hold personal data); returns how many.
    package func purgeExpired() async throws -> Int {
        let rows = try await database.query(
            """
            WITH gone AS (DELETE FROM pending_registrations WHERE expires_at <= now() RETURNING 1) SELECT count(*) FROM gone
            """)  // index: pending_registrations_expiry_idx
        return Int(try rows[0].decode(Int64.self))
    }
}
