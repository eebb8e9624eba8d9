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
    /// The party asked the same within 30 days: that query (answered, or still running).
    case repeated(AggregateQueryRecord)
    /// Not enough budget: the window that is short, and seconds until enough of it frees up.
    case exhausted(window: String, retryAfter: Int)
}

/// Privacy budget limits, in hundredths of ε.
package struct BudgetLimits: Sendable {
    package var perDay: Int
    package var per30Days: Int

    package init(perDay: Int, per30Days: Int) {
        self.perDay = perDay
        self.per30Days = per30Days
    }
}

/// `aggregate_queries` (with the budget they spend) and `aggregate_audit`.
package struct AggregateQueryStore: Sendable {
    let database: Database
    static let dayMs: Int64 = 86_400_000

    package init(database: Database) {
        self.database = database
    }

    /// Starts a query: under a lock on the party, returns an earlier identical query of the last
    /// 30 days, or reserves ε if both rolling windows can take it.
    package func start(
        thirdPartyId: Int64, fingerprint: [UInt8], spec: String, epsilonHundredths: Int, limits: BudgetLimits
    ) async throws -> AggregateStart {
        try await database.withTransaction { connection in
            let logger = database.logger
            _ = try await connection.query("SELECT id FROM third_parties WHERE id = \(thirdPartyId) FOR UPDATE", logger: logger).collect()
            let earlier = try await connection.query("""
                SELECT \(unescaped: Self.columns) FROM aggregate_queries
                WHERE third_party_id = \(thirdPartyId) AND fingerprint = \(ByteBuffer(bytes: fingerprint))
                  AND created_at > now() - interval '30 days' AND status <> 'failed'
                ORDER BY id DESC LIMIT 1
                """, logger: logger).collect()
            if let row = earlier.first { return .repeated(try Self.record(row)) }
            let spends = try await Self.spends(thirdPartyId: thirdPartyId, on: connection, logger: logger)
            let nowMs = Date().epochMilliseconds
            for (window, span, limit) in [("day", Self.dayMs, limits.perDay), ("30 days", 30 * Self.dayMs, limits.per30Days)] {
                if let wait = Self.wait(spends, nowMs: nowMs, span: span, limit: limit, needed: epsilonHundredths) {
                    return .exhausted(window: window, retryAfter: wait)
                }
            }
            let inserted = try await connection.query("""
                INSERT INTO aggregate_queries (third_party_id, epsilon_hundredths, fingerprint, spec)
                VALUES (\(thirdPartyId), \(Int32(epsilonHundredths)), \(ByteBuffer(bytes: fingerprint)), \(spec)::jsonb)
                RETURNING \(unescaped: Self.columns)
                """, logger: logger).collect()
            return .reserved(try Self.record(inserted[0]))
        }
    }

    /// ε spent in each rolling window, in hundredths.
    package func spent(thirdPartyId: Int64) async throws -> (day: Int, days30: Int) {
        let spends = try await database.withConnection { connection in
            try await Self.spends(thirdPartyId: thirdPartyId, on: connection, logger: database.logger)
        }
        let nowMs = Date().epochMilliseconds
        return (spends.filter { $0.atMs > nowMs - Self.dayMs }.map(\.hundredths).reduce(0, +), spends.map(\.hundredths).reduce(0, +))
    }

    /// Records the released answer and appends it to the audit chain, in one transaction.
    package func finish(_ query: AggregateQueryRecord, thirdParty: UUID, status: AggregateQueryStatus, answer: String, fingerprint: [UInt8]) async throws -> AggregateQueryRecord {
        try await database.withTransaction { connection in
            let rows = try await connection.query("""
                UPDATE aggregate_queries SET status = \(status), answer = \(answer)::jsonb, answered_at = now()
                WHERE id = \(query.id) RETURNING \(unescaped: Self.columns)
                """, logger: database.logger).collect()
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
        try await database.query("UPDATE aggregate_queries SET status = 'failed' WHERE id = \(query.id) AND status = 'running'")
    }

    package func find(thirdPartyId: Int64, publicId: UUID) async throws -> AggregateQueryRecord? {
        try await database.query("""
            SELECT \(unescaped: Self.columns) FROM aggregate_queries WHERE third_party_id = \(thirdPartyId) AND public_id = \(publicId)
            """).first.map(Self.record)
    }

    package func find(id: Int64) async throws -> AggregateQueryRecord? {
        try await database.query("SELECT \(unescaped: Self.columns) FROM aggregate_queries WHERE id = \(id)").first.map(Self.record)
    }

    /// The party's queries, newest first.
    package func list(thirdPartyId: Int64, beforeId: Int64?, limit: Int) async throws -> [AggregateQueryRecord] {
        try await database.query("""
            SELECT \(unescaped: Self.columns) FROM aggregate_queries
            WHERE third_party_id = \(thirdPartyId) AND id < \(beforeId ?? .max) AND status <> 'failed'
            ORDER BY id DESC LIMIT \(limit)
            """).map(Self.record)
    }

    private static let columns = "id, public_id, created_at, epsilon_hundredths, status, spec::text, answer::text"

    private static func record(_ row: PostgresRow) throws -> AggregateQueryRecord {
        let r = try row.decode((Int64, UUID, Date, Int32, AggregateQueryStatus, String, String?).self)
        return AggregateQueryRecord(id: r.0, publicId: r.1, createdAt: r.2, epsilonHundredths: Int(r.3), status: r.4, spec: r.5, answer: r.6)
    }

    private static func spends(thirdPartyId: Int64, on connection: LeasedConnection, logger: Logger) async throws -> [(atMs: Int64, hundredths: Int)] {
        try await connection.query("""
            SELECT (extract(epoch FROM created_at) * 1000)::int8, epsilon_hundredths FROM aggregate_queries
            WHERE third_party_id = \(thirdPartyId) AND status <> 'failed' AND created_at > now() - interval '30 days'
            ORDER BY created_at
            """, logger: logger).collect().map { row in
            let (at, hundredths) = try row.decode((Int64, Int32).self)
            return (at, Int(hundredths))
        }
    }

    /// Nil when `needed` fits in the window now; otherwise the seconds until enough spends (oldest
    /// first) have left the window.
    static func wait(_ spends: [(atMs: Int64, hundredths: Int)], nowMs: Int64, span: Int64, limit: Int, needed: Int) -> Int? {
        let inWindow = spends.filter { $0.atMs > nowMs - span }
        var total = inWindow.map(\.hundredths).reduce(0, +)
        if total + needed <= limit { return nil }
        for spend in inWindow {
            total -= spend.hundredths
            if total + needed <= limit { return Int((spend.atMs + span - nowMs + 999) / 1000) }
        }
        return Int(span / 1000)   // more than the window's limit: never (answered as the window's length)
    }
}
