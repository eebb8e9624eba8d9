import Crypto
import Data4HelpCore
import Foundation
import PostgresNIO

/// A stored group query and its released answer.
package struct AggregateQueryRecord: Sendable {
    package var id: Int64
    package var publicId: UUID
    package var createdAt: Date
    package var epsilonHundredths: Int
    package var status: AggregateQueryStatus
    package var spec: String
    package var answer: String?
}

/// How starting a query went.
package enum AggregateStart: Sendable {
    /// Budget reserved; run it and `finish` it.
    case reserved(AggregateQueryRecord)
    /// The party asked the same within the repeat window: that query (answered, or still running).
    case repeated(AggregateQueryRecord)
    /// Refused by the budget rule, with what it said.
    case refused(BudgetRefusal)
}

/// A party's ε spending as read under its lock: each query that counts, oldest first.
package struct BudgetLedger: Sendable {
    package let spends: [(atMs: Int64, hundredths: Int)]
    /// When it was read.
    package let nowMs: Int64

    package init(spends: [(atMs: Int64, hundredths: Int)], nowMs: Int64) {
        self.spends = spends
        self.nowMs = nowMs
    }
}

/// Why the budget rule refused a query: the window that is short, and seconds until enough of it frees up.
package struct BudgetRefusal: Error, Sendable, Equatable {
    package let window: String
    package let retryAfter: Int

    package init(window: String, retryAfter: Int) {
        self.window = window
        self.retryAfter = retryAfter
    }
}

/// `aggregate_queries` (with the budget they spend) and `aggregate_audit`.
package struct AggregateQueryStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    /// Starts a query, under a lock on the party (the unit of work of the budget): an earlier
    /// identical query asked within `repeatWindow` is returned as it is; otherwise the spends of
    /// the last `ledgerWindow` go to `decide` — the component's budget rule, which answers a
    /// refusal or nil — and ε is reserved when it allows.
    package func start(
        thirdPartyId: Int64, fingerprint: [UInt8], spec: String, epsilonHundredths: Int, repeatWindow: Duration, ledgerWindow: Duration,
        decide: (BudgetLedger) -> BudgetRefusal?
    ) async throws -> AggregateStart {
        try await database.withTransaction { connection in
            let logger = database.logger
            _ = try await connection.query("SELECT id FROM third_parties WHERE id = \(thirdPartyId) FOR UPDATE", logger: logger).collect()
            let earlier = try await connection.query(
                """
                SELECT \(unescaped: Self.columns) FROM aggregate_queries
                WHERE third_party_id = \(thirdPartyId) AND fingerprint = \(ByteBuffer(bytes: fingerprint))
                  AND created_at > now() - \(repeatWindow.wholeMilliseconds) * interval '1 millisecond' AND status <> 'failed'
                ORDER BY id DESC LIMIT 1
                """, logger: logger
            ).collect()
            if let row = earlier.first { return .repeated(try Self.record(row)) }
            if let refusal = decide(try await Self.ledger(thirdPartyId: thirdPartyId, window: ledgerWindow, on: connection, logger: logger)) {
                return .refused(refusal)
            }
            let inserted = try await connection.query(
                """
                INSERT INTO aggregate_queries (third_party_id, epsilon_hundredths, fingerprint, spec)
                VALUES (\(thirdPartyId), \(Int32(epsilonHundredths)), \(ByteBuffer(bytes: fingerprint)), \(spec)::jsonb)
                RETURNING \(unescaped: Self.columns)
                """, logger: logger
            ).collect()
            return .reserved(try Self.record(inserted[0]))
        }
    }

    /// The party's spends of the last `window`.
    package func ledger(thirdPartyId: Int64, window: Duration) async throws -> BudgetLedger {
        try await database.withConnection { connection in
            try await Self.ledger(thirdPartyId: thirdPartyId, window: window, on: connection, logger: database.logger)
        }
    }

    /// Records the released answer, the individuals it included (`population`, for their privacy
    /// record) and appends it to the audit chain, in one transaction; a repeat of the question
    /// waiting on any instance is woken at the commit (`channel`).
    package func finish(
        _ query: AggregateQueryRecord, thirdParty: UUID, status: AggregateQueryStatus, answer: String, fingerprint: [UInt8],
        population: [Int64] = []
    ) async throws -> AggregateQueryRecord {
        try await database.withTransaction { connection in
            if !population.isEmpty {
                _ = try await connection.query(
                    """
                    INSERT INTO aggregate_populations (query_id, members) VALUES (\(query.id), \(population)::int8[])
                    """, logger: database.logger)
            }
            try await Self.announceAnswer(query.id, on: connection, logger: database.logger)
            let rows = try await connection.query(
                """
                UPDATE aggregate_queries SET status = \(status), answer = \(answer)::jsonb, answered_at = now()
                WHERE id = \(query.id) RETURNING \(unescaped: Self.columns)
                """, logger: database.logger
            ).collect()
            try await AuditChain.append(
                AuditEntry(
                    atMs: Date().epochMilliseconds, thirdParty: thirdParty, query: query.publicId, fingerprint: fingerprint,
                    epsilonHundredths: query.epsilonHundredths, decision: status.rawValue, answer: answer
                ),
                on: connection, logger: database.logger
            )
            return try Self.record(rows[0])
        }
    }

    /// Merges the pending list of the populations' GIN index into the index (`PopulationIndexMerger`):
    /// the pages it removed from the list, 0 when it was empty.
    package func mergePopulationIndex() async throws -> Int64 {
        try await database.query("SELECT gin_clean_pending_list('aggregate_populations_members_idx'::regclass)")[0].decode(Int64.self)
    }

    /// Logs a repeated question (answered from the store, nothing spent).
    package func auditRepeat(_ query: AggregateQueryRecord, thirdParty: UUID, fingerprint: [UInt8]) async throws {
        try await database.withTransaction { connection in
            try await AuditChain.append(
                AuditEntry(
                    atMs: Date().epochMilliseconds, thirdParty: thirdParty, query: query.publicId, fingerprint: fingerprint,
                    epsilonHundredths: 0, decision: "repeat", answer: query.answer ?? ""
                ),
                on: connection, logger: database.logger
            )
        }
    }

    /// Gives the reservation back: the query failed before anything was released.
    package func fail(_ query: AggregateQueryRecord) async throws {
        try await database.withTransaction { connection in
            try await connection.query(
                "UPDATE aggregate_queries SET status = 'failed' WHERE id = \(query.id) AND status = 'running'", logger: database.logger)
            try await Self.announceAnswer(query.id, on: connection, logger: database.logger)
        }
    }

    /// The channel on which a query's end (answered, refused or failed) is announced, at commit.
    package static let channel = "data4help_aggregates"

    private static func announceAnswer(_ id: Int64, on connection: LeasedConnection, logger: Logger) async throws {
        try await connection.query("SELECT pg_notify(\(channel), \(String(id)))", logger: logger)
    }

    package func find(thirdPartyId: Int64, publicId: UUID) async throws -> AggregateQueryRecord? {
        try await database.query(
            """
            SELECT \(unescaped: Self.columns) FROM aggregate_queries WHERE third_party_id = \(thirdPartyId) AND public_id = \(publicId)
            """
        ).first.map(Self.record)
    }

    package func find(id: Int64) async throws -> AggregateQueryRecord? {
        try await database.query("SELECT \(unescaped: Self.columns) FROM aggregate_queries WHERE id = \(id)").first.map(Self.record)
    }

    /// The party's queries, newest first.
    package func list(thirdPartyId: Int64, beforeId: Int64?, limit: Int) async throws -> [AggregateQueryRecord] {
        try await database.query(
            """
            SELECT \(unescaped: Self.columns) FROM aggregate_queries
            WHERE third_party_id = \(thirdPartyId) AND id < \(beforeId ?? .max) AND status <> 'failed'
            ORDER BY id DESC LIMIT \(limit)
            """
        ).map(Self.record)
    }

    private static let columns = "id, public_id, created_at, epsilon_hundredths, status, spec::text, answer::text"

    private static func record(_ row: PostgresRow) throws -> AggregateQueryRecord {
        let r = try row.decode((Int64, UUID, Date, Int32, AggregateQueryStatus, String, String?).self)
        return AggregateQueryRecord(id: r.0, publicId: r.1, createdAt: r.2, epsilonHundredths: Int(r.3), status: r.4, spec: r.5, answer: r.6)
    }

    private static func ledger(thirdPartyId: Int64, window: Duration, on connection: LeasedConnection, logger: Logger) async throws -> BudgetLedger {
        let spends = try await connection.query(
            """
            SELECT (extract(epoch FROM created_at) * 1000)::int8, epsilon_hundredths FROM aggregate_queries
            WHERE third_party_id = \(thirdPartyId) AND status <> 'failed' AND created_at > now() - \(window.wholeMilliseconds) * interval '1 millisecond'
            ORDER BY created_at
            """, logger: logger
        ).collect().map { row in
            let (at, hundredths) = try row.decode((Int64, Int32).self)
            return (atMs: at, hundredths: Int(hundredths))
        }
        return BudgetLedger(spends: spends, nowMs: Date().epochMilliseconds)
    }
}
