import Crypto
import Foundation
import PostgresNIO

/// One row of the aggregate audit log.
package struct AuditEntry: Sendable, Equatable {
    package var atMs: Int64
    package var thirdParty: UUID
    package var query: UUID
    package var fingerprint: [UInt8]
    package var epsilonHundredths: Int
    package var decision: String
    package var answer: String

    /// What is hashed, fields separated by `|` (the answer, last, may hold anything).
    func canonicalLine(id: Int64) -> String {
        let hex = fingerprint.map { String(format: "%02x", $0) }.joined()
        return
            "\(id)|\(atMs)|\(thirdParty.uuidString.lowercased())|\(query.uuidString.lowercased())|\(hex)|\(epsilonHundredths)|\(decision)|\(answer)"
    }
}

/// The hash chain over `aggregate_audit`: hash(n) = SHA-256(hash(n-1) ‖ canonical line of row n),
/// hash(0) = 32 zero bytes.
package enum AuditChain {
    static let genesis = [UInt8](repeating: 0, count: 32)

    static func hash(previous: [UInt8], entry: AuditEntry, id: Int64) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(data: previous)
        hasher.update(data: Data(entry.canonicalLine(id: id).utf8))
        return Array(hasher.finalize())
    }

    /// Appends under a transaction-level advisory lock, so rows are numbered and chained in order.
    static func append(_ entry: AuditEntry, on connection: LeasedConnection, logger: Logger) async throws {
        _ = try await connection.query("SELECT pg_advisory_xact_lock(\(Self.lockKey))", logger: logger).collect()
        let last = try await connection.query("SELECT id, hash FROM aggregate_audit ORDER BY id DESC LIMIT 1", logger: logger).collect()
        let (previousId, previous) =
            try last.first.map { row in
                let (id, hash) = try row.decode((Int64, ByteBuffer).self)
                return (id, Array(hash.readableBytesView))
            } ?? (Int64(0), genesis)
        let id = previousId + 1
        let hash = Self.hash(previous: previous, entry: entry, id: id)
        _ = try await connection.query(
            """
            INSERT INTO aggregate_audit (id, at_ms, third_party, query, fingerprint, epsilon_hundredths, decision, answer, previous_hash, hash)
            VALUES (\(id), \(entry.atMs), \(entry.thirdParty), \(entry.query), \(ByteBuffer(bytes: entry.fingerprint)),
                    \(Int32(entry.epsilonHundredths)), \(entry.decision), \(entry.answer), \(ByteBuffer(bytes: previous)), \(ByteBuffer(bytes: hash)))
            """, logger: logger)
    }

    /// An arbitrary constant naming the audit chain's lock.
    static let lockKey: Int64 = 0x0D4_A0D1

    /// The outcome of checking the whole chain.
    package struct Verification: Sendable, Equatable {
        package var rows: Int
        /// The hash of the last row: note it down (or publish it) to detect a cut-off tail later.
        package var head: [UInt8]
        /// The first row whose numbering, link or hash does not hold; nil when the chain is intact.
        package var firstBrokenRow: Int64?
    }

    /// Recomputes every hash from the first row.
    package static func verify(database: Database) async throws -> Verification {
        var previous = genesis
        var expectedId: Int64 = 1
        var rows = 0
        let stream = try await database.withConnection { connection in
            try await connection.query(
                """
                SELECT id, at_ms, third_party, query, fingerprint, epsilon_hundredths, decision, answer, previous_hash, hash
                FROM aggregate_audit ORDER BY id
                """, logger: database.logger
            ).collect()
        }
        for row in stream {
            let r = try row.decode((Int64, Int64, UUID, UUID, ByteBuffer, Int32, String, String, ByteBuffer, ByteBuffer).self)
            let entry = AuditEntry(
                atMs: r.1, thirdParty: r.2, query: r.3, fingerprint: Array(r.4.readableBytesView),
                epsilonHundredths: Int(r.5), decision: r.6, answer: r.7
            )
            let stored = Array(r.9.readableBytesView)
            guard r.0 == expectedId, Array(r.8.readableBytesView) == previous, hash(previous: previous, entry: entry, id: r.0) == stored else {
                return Verification(rows: rows, head: previous, firstBrokenRow: r.0)
            }
            previous = stored
            expectedId += 1
            rows += 1
        }
        return Verification(rows: rows, head: previous, firstBrokenRow: nil)
    }
}
