import Foundation
import PostgresNIO

/// The compaction of settled history (migration 0046): an individual's minute blocks of hours
/// older than the late-data horizon merged into hour blocks, and the state of the pass doing it.
/// HealthSharing's `SampleCompactor` drives it.
package struct SampleCompactionStore: Sendable {
    /// A pass this instance holds: the hours it compacts and how far through the individuals it is.
    package struct Pass: Sendable, Equatable {
        /// Hours from here (a day before the last pass's end, or `Date.distantPast` for the first
        /// pass)...
        package let from: Date
        /// ...to here (exclusive; a UTC hour).
        package let before: Date
        /// The individuals with an id up to this one are done.
        package var after: Int64
    }

    /// What merging an individual's hours did.
    package struct Merged: Sendable, Equatable {
        /// The blocks replaced: minute blocks, and hour and 8-hour blocks written again.
        package var blocksReplaced = 0
        /// The blocks written: hour blocks and 8-hour blocks (migration 0050).
        package var hourBlocks = 0
        package var eightHourBlocks = 0
        package var samples = 0

        package init() {}

        package static func += (total: inout Merged, more: Merged) {
            total.blocksReplaced += more.blocksReplaced
            total.hourBlocks += more.hourBlocks
            total.eightHourBlocks += more.eightHourBlocks
            total.samples += more.samples
        }
    }

    /// The length of an 8-hour block and of the UTC windows the compactor takes (migration 0050).
    package static let windowSeconds: TimeInterval = 28_800

    let database: Database

    package init(database: Database) {
        self.database = database
    }

    /// The pass in progress, or a new one ending at `horizon` before the database's clock (cut to
    /// the 8-hour window, migration 0050), if no other instance holds the lease; the lease lasts `lease`. Nil: another
    /// instance is compacting.
    package func claimPass(horizon: TimeInterval, lease: TimeInterval) async throws -> Pass? {
        let rows = try await database.query(
            """
            UPDATE sample_compaction SET
                pass_before = COALESCE(pass_before, date_bin('8 hours', now() - \(horizon) * interval '1 second', 'epoch')),
                leased_until = now() + \(lease) * interval '1 second'
            WHERE leased_until < now()
            RETURNING CASE WHEN compacted_before > '-infinity' THEN compacted_before - interval '1 day' END, pass_before, pass_after
            """)
        guard let row = rows.first else { return nil }
        let (from, before, after) = try row.decode((Date?, Date, Int64).self)
        return Pass(from: from ?? .distantPast, before: before, after: after)
    }

    /// A span of an individual's history to compact, asked for by an import that ended (migration
    /// 0051).
    package struct Request: Sendable, Equatable {
        package let individualId: Int64
        package let from: Date
        package let before: Date
    }

    /// Up to `limit` requests, oldest individuals first.
    package func requests(limit: Int) async throws -> [Request] {
        try await database.query(
            "SELECT individual_id, from_at, before_at FROM compaction_requests ORDER BY individual_id LIMIT \(limit)"
        ).map { row in
            let (id, from, before) = try row.decode((Int64, Date, Date).self)
            return Request(individualId: id, from: from, before: before)
        }
    }

    /// Removes a request that was compacted, unless a later import widened it meanwhile (then the
    /// next pass compacts it again).
    package func settle(_ request: Request) async throws {
        try await database.query(
            """
            DELETE FROM compaction_requests
            WHERE individual_id = \(request.individualId) AND from_at = \(request.from) AND before_at = \(request.before)
            """)
    }

    /// Records that the pass has done the individuals up to `after`, and renews the lease.
    package func recordProgress(after: Int64, lease: TimeInterval) async throws {
        try await database.query(
            "UPDATE sample_compaction SET pass_after = \(after), leased_until = now() + \(lease) * interval '1 second'")
    }

    /// Ends the pass: its hours are compacted; the next pass starts from them. The lease is
    /// released.
    package func finish(_ pass: Pass) async throws {
        try await database.query(
            """
            UPDATE sample_compaction
            SET compacted_before = \(pass.before), pass_before = NULL, pass_after = 0, leased_until = '-infinity'
            """)
    }

    /// Of the next `limit` individuals after `after` (by id), those with a block to rewrite
    /// (`data4help_compactable`: a minute block, or an hour block that still has keys or
    /// millisecond offsets in whole seconds, migrations 0049 and 0050) in `[from, before)`, and
    /// the last id looked at (nil: there were no more individuals). Index:
    /// `sample_blocks_individual_time_idx`, one range probe per individual (which reads the
    /// individual's blocks until it finds one).
    package func individualsToCompact(after: Int64, limit: Int, from: Date, before: Date) async throws -> (ids: [Int64], last: Int64?) {
        let rows = try await database.query(
            """
            SELECT i.id, EXISTS (
                       SELECT 1 FROM sample_blocks b
                       WHERE b.individual_id = i.id AND b.block_start >= \(from) AND b.block_start < \(before)
                         AND data4help_compactable(b.block_minutes, b.keys, b.offsets_ms, cardinality(b.vals)))
            FROM (SELECT id FROM individuals WHERE id > \(after) ORDER BY id LIMIT \(limit)) i
            ORDER BY i.id
            """)
        var ids: [Int64] = [], last: Int64?
        for row in rows {
            let (id, due) = try row.decode((Int64, Bool).self)
            if due { ids.append(id) }
            last = id
        }
        return (ids, last)
    }

    /// Rewrites the individual's 8-hour windows in `[from, before)` that hold a block to rewrite
    /// (`data4help_compactable`: minute blocks, hour blocks with keys, offsets in milliseconds
    /// that are whole seconds, or few samples) as 8-hour or hour blocks (`SampleCompactionStatement`):
    /// a day of windows per transaction, each under the individual's ingest lock (the one
    /// `HealthDataStore.ingest` takes), so an upload sees a window before or after, never
    /// half-way. Only whole windows: `before` is cut to one (migration 0050).
    package func compact(individualId: Int64, from: Date, before: Date) async throws -> Merged {
        var total = Merged()
        var from = from
        let before = Date(timeIntervalSince1970: (before.timeIntervalSince1970 / Self.windowSeconds).rounded(.down) * Self.windowSeconds)
        while from < before {
            let step = try await database.withTransaction { connection -> (merged: Merged, next: Date)? in
                _ = try await connection.query(
                    "SELECT pg_advisory_xact_lock(hashtextextended('data4help.ingest', \(individualId)))", logger: database.logger)
                // The first window left, and a day of windows from it.
                let first = try await connection.query(
                    """
                    SELECT date_bin('8 hours', min(block_start), 'epoch') FROM sample_blocks
                    WHERE individual_id = \(individualId) AND block_start >= \(from) AND block_start < \(before)
                      AND data4help_compactable(block_minutes, keys, offsets_ms, cardinality(vals))
                    """, logger: database.logger
                ).collect().first?.decode(Date?.self)
                guard let first = first ?? nil else { return nil }
                let end = min(first.addingTimeInterval(86_400), before)
                let rows = try await connection.execute(
                    SampleCompactionStatement(individualId: individualId, from: first, before: end), logger: database.logger)
                var merged = Merged()
                for (replaced, minutes, samples) in rows {
                    if minutes == 480 { merged.eightHourBlocks += 1 } else { merged.hourBlocks += 1 }
                    merged.blocksReplaced += Int(replaced)
                    merged.samples += Int(samples)
                }
                return (merged: merged, next: end)
            }
            guard let step else { break }
            total += step.merged
            from = step.next
        }
        return total
    }
}

/// One individual's 8-hour windows in `[$2, $3)` (whole windows) that hold a block to rewrite
/// (`data4help_compactable`), every block of each deleted and its samples written again: every
/// sample kept (none is dropped as a duplicate: the blocks never had it twice), the arrays as
/// every writer makes them (`blockArrays`). A window of a type with at most 3,600 samples that
/// its offset and tag tell apart becomes one 8-hour block without keys (migration 0050); any
/// other, hour blocks, each without keys (migration 0049) unless two of the hour's samples share
/// offset and tag (then the hour keeps its keys). A window is one 8-hour block or only hour and
/// minute blocks, so the inserts conflict with nothing; if one ever did, the transaction fails
/// and nothing moves. One row per block written: the blocks it replaced, its length in minutes
/// and its samples.
struct SampleCompactionStatement: PostgresPreparedStatement {
    static let name = "data4help_compact_samples"
    static let sql = """
        WITH windows AS MATERIALIZED (
            SELECT DISTINCT b.sample_type, date_bin('8 hours', b.block_start, 'epoch') AS window_start
            FROM sample_blocks b
            WHERE b.individual_id = $1 AND b.block_start >= $2 AND b.block_start < $3
              AND data4help_compactable(b.block_minutes, b.keys, b.offsets_ms, cardinality(b.vals))
        ),
        gone AS (
            DELETE FROM sample_blocks b USING windows w
            WHERE b.individual_id = $1 AND b.sample_type = w.sample_type
              AND b.block_start >= w.window_start AND b.block_start < w.window_start + interval '8 hours'
            RETURNING b.sample_type, b.block_start, w.window_start, b.offsets_ms, b.offsets_s, b.vals, b.durations_ms, b.keys, b.source_ids, b.tags
        ),
        samples AS (   -- each sample's offset in its window and in its hour, and its settled keys for both
            SELECT s.*, s.window_offset_ms % 3600000 AS hour_offset_ms,
                   s.window_start + (s.window_offset_ms / 3600000) * interval '1 hour' AS hour,
                   data4help_settled_key(s.window_offset_ms, s.tag) AS window_key,
                   data4help_settled_key(s.window_offset_ms % 3600000, s.tag) AS hour_key
            FROM (
                SELECT g.sample_type, g.window_start,
                       data4help_offset(e.offset_ms, e.offset_s) + (extract(epoch FROM g.block_start - g.window_start) * 1000)::int4 AS window_offset_ms,
                       e.val, e.duration_ms, e.key AS client_key, COALESCE(e.source_id, 0) AS source_id,
                       COALESCE(e.tag, data4help_key_tag(e.key)) AS tag   -- a block without keys has tags
                FROM gone g
                CROSS JOIN LATERAL unnest(g.offsets_ms, g.offsets_s, g.vals, g.durations_ms, g.keys, g.source_ids, g.tags)
                    AS e(offset_ms, offset_s, val, duration_ms, key, source_id, tag)
            ) s
        ),
        long AS (   -- a window goes into one 8-hour block when it is sparse and its settled keys tell its samples apart
            SELECT sample_type, window_start, count(*) <= 3600 AND count(DISTINCT window_key) = count(*) AS long
            FROM samples GROUP BY sample_type, window_start
        ),
        hours AS (   -- an hour goes without keys when its settled keys tell its samples apart
            SELECT sample_type, hour, count(DISTINCT hour_key) = count(*) AS keyless FROM samples GROUP BY sample_type, hour
        ),
        placed AS (
            SELECT s.sample_type, s.val, s.duration_ms, s.source_id, s.tag, l.long OR h.keyless AS keyless,
                   CASE WHEN l.long THEN s.window_start ELSE s.hour END AS block_start,
                   CASE WHEN l.long THEN 480 ELSE 60 END::int2 AS block_minutes,
                   CASE WHEN l.long THEN s.window_offset_ms ELSE s.hour_offset_ms END AS offset_ms,
                   CASE WHEN l.long THEN s.window_key WHEN h.keyless THEN s.hour_key ELSE s.client_key END AS key
            FROM samples s
            JOIN long l ON l.sample_type = s.sample_type AND l.window_start = s.window_start
            JOIN hours h ON h.sample_type = s.sample_type AND h.hour = s.hour
        ),
        written AS (
            INSERT INTO sample_blocks (individual_id, sample_type, block_start, block_minutes, offsets_ms, offsets_s, vals, durations_ms, keys, source_ids, tags)
            SELECT $1, sample_type, block_start, max(block_minutes), \(blockArrays)
            FROM placed
            GROUP BY sample_type, block_start
            RETURNING sample_type, block_start, block_minutes, cardinality(vals) AS samples
        )
        SELECT (SELECT count(*) FROM gone g
                WHERE g.sample_type = w.sample_type AND g.block_start >= w.block_start
                  AND g.block_start < w.block_start + w.block_minutes * interval '1 minute'),
               w.block_minutes, w.samples::int8
        FROM written w
        """

    typealias Row = (Int64, Int16, Int64)

    let individualId: Int64
    let from: Date
    let before: Date

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 3)
        bindings.append(individualId)
        bindings.append(from)
        bindings.append(before)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
    }
}
