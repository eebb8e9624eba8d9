import Data4HelpCore
import DatabaseLink
import DatabaseTestSupport
import Foundation
import PostgresNIO
import Testing

/// A page of a listing reads the blocks that hold it, whatever the person's history: the window's
/// bounds must be index conditions in the plan PostgreSQL keeps for the statement, not filters
/// applied after reading the month (migration 0044: until then, from the sixth page on, a page of
/// ten read every block the person had in the month).
@Suite("Sample listings read only the blocks a page needs")
struct SampleListingTests {
    @Test(.timeLimit(.minutes(20))) func pagesReadADozenBlocksOutOfTwentyThousand() async throws {
        let url = try await TestPostgres.shared.migratedDatabase()
        // One connection: the listing's statements and the statistics below are one backend's.
        let database = Database(configuration: url.clientConfiguration(maximumConnections: 1), logger: TestPostgres.logger)
        try await database.whileRunning {
            let now = Date()
            try await PartitionMaintainer(database: database).ensureAround(now, monthsBack: 2, monthsAhead: 1)
            let person = try await IndividualStore(database: database).insert(
                NewIndividual(
                    email: "dense@example.org", passwordHash: "-", fiscalCode: "DENSE00001", fullName: "Dense", birthDate: "1970-01-01",
                    sex: "other", homeArea: "IT-MI")
            ).id
            // 20,000 minute blocks of two readings each (about two weeks), analysed, and no
            // autovacuum reading the partitions while the statistics are compared.
            try await database.query(
                """
                INSERT INTO sample_blocks (individual_id, block_start, sample_type, offsets_ms, vals, keys)
                SELECT \(person), date_trunc('minute', now()) - g * interval '1 minute', 1,
                       ARRAY[0, 30000], ARRAY[60 + g % 30, 61 + g % 30]::real[], ARRAY[2 * g, 2 * g + 1]::int8[]
                FROM generate_series(0, 19999) AS g
                """)
            try await database.query(
                """
                DO $$ DECLARE p regclass; BEGIN
                    FOR p IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'sample_blocks'::regclass LOOP
                        EXECUTE format('ALTER TABLE %s SET (autovacuum_enabled = off)', p);
                    END LOOP;
                END $$
                """)
            try await database.query("ANALYZE sample_blocks")

            let newestMs = try await database.query(
                "SELECT (extract(epoch FROM max(block_start)) * 1000)::int8 FROM sample_blocks WHERE individual_id = \(person)"
            )[0].decode(Int64.self)
            let nowMs = Int64(now.timeIntervalSince1970 * 1000)

            let reader = HealthDataReader(database: database)
            let before = try await Self.blockRowsRead(database)
            // Twelve pages each way: PostgreSQL plans a prepared statement's first five executions
            // for their values and may keep a generic plan from the sixth on.
            var newest: [SampleRow] = [], oldest: [SampleRow] = []
            for _ in 0..<12 {
                newest = try await reader.samples(
                    individualId: person, types: [1], fromMs: nil, toMs: nowMs + 86_400_000, descending: true, limit: 11, after: nil)
                oldest = try await reader.samples(
                    individualId: person, types: [1], fromMs: nowMs - 3_600_000, toMs: nil, descending: false, limit: 11,
                    after: nil)
            }
            let read = try await Self.blockRowsRead(database) - before

            // The newest eleven readings, 30 s apart; the oldest eleven from an hour ago.
            let newestExpected = (0..<11).map { newestMs + 30_000 - Int64($0) * 30_000 }
            #expect(newest.map(\.startMs) == newestExpected)
            let firstExpected = (nowMs - 3_600_000 + 29_999) / 30_000 * 30_000
            let oldestExpected = (0..<11).map { firstExpected + Int64($0) * 30_000 }
            #expect(oldest.map(\.startMs) == oldestExpected)
            // Per round: newest first, at most two statements (this month's window, then four
            // months') of two scans of 12 blocks; oldest first, the same two scans, the second
            // from the hour that may hold an hour block (up to 60 minute blocks before the
            // window). Under 200 a round; reading the month was 20,000 a page.
            #expect(read < 12 * 200, "\(read) block rows read for 24 pages")
        }
    }

    /// Rows of sample_blocks' partitions read so far by sequential and index scans, once this
    /// backend's pending statistics are flushed.
    private static func blockRowsRead(_ database: Database) async throws -> Int64 {
        try await database.query("SELECT pg_stat_force_next_flush()")
        let rows = try await database.query(
            """
            SELECT coalesce(sum(coalesce(s.seq_tup_read, 0) + coalesce(s.idx_tup_fetch, 0)), 0)::int8
            FROM pg_stat_user_tables AS s JOIN pg_inherits AS i ON i.inhrelid = s.relid
            WHERE i.inhparent = 'sample_blocks'::regclass
            """)
        return try rows[0].decode(Int64.self)
    }
}
