import Data4HelpCore
import Foundation
import PostgresNIO

/// The samples of an import's batch that fall in settled hours, grouped into the hour blocks they
/// will be stored as (migration 0032) — built here, so that PostgreSQL only copies them.
///
/// The ingest statement (`SampleIngestStatement`) takes every sample as a row: it places it,
/// removes duplicates, sorts each block and aggregates its arrays. For an import that writes
/// hours holding nothing yet — nearly all of one — that was 12 µs a record of PostgreSQL's time
/// (`auto_explain`: 64 ms for 5,216 records, 508 blocks; the sorts and `array_agg`s most of it).
/// Here each block arrives ready: the samples of one type and hour, duplicates (the same settled
/// key: offset and tag, migration 0049) kept once — the first in the batch, as the
/// ingest statement keeps — and ordered by (offset, key), as every writer of `sample_blocks`
/// orders them; without keys, with tags, and offsets in seconds where they are all whole
/// (migration 0050). `HourBlockInsertStatement` stores a block only if its hour holds no block
/// yet; the samples of the others go through the ingest statement, which merges them with what
/// is there.
struct HistoryHourBlocks {
    // Per block.
    private(set) var types: [Int16] = []
    private(set) var starts: [Date] = []
    /// 1-based bounds of the block's samples in the sample arrays (PostgreSQL's array slices).
    private(set) var firsts: [Int32] = []
    private(set) var lasts: [Int32] = []
    /// Whether any sample of the block has a duration, and any a source.
    private(set) var timed: [Bool] = []
    private(set) var sourced: [Bool] = []
    /// Whether every sample of the block starts on a whole second: its offsets are stored in
    /// seconds (migration 0050).
    private(set) var inSeconds: [Bool] = []
    /// Per block, every position of the batch it was made from, duplicates included.
    private(set) var members: [[Int]] = []
    /// What the block adds to its day's rollup (used whole when its hour lies in one day of the
    /// individual's zone): the sum, least and greatest value of its samples, and 1-based bounds
    /// of its distinct sources (ascending) in `blockSources`.
    private(set) var totals: [Double] = []
    private(set) var lows: [Float] = []
    private(set) var highs: [Float] = []
    private(set) var sourceFirsts: [Int32] = []
    private(set) var sourceLasts: [Int32] = []
    private(set) var blockSources: [Int16] = []

    // Per sample stored, block after block.
    private(set) var offsets: [Int32] = []
    /// The offset in whole seconds (below 3,600), where the block's are all whole seconds; else 0.
    private(set) var offsetSeconds: [Int16] = []
    private(set) var values: [Float] = []
    /// -1 for an instant sample.
    private(set) var durations: [Int32] = []
    /// The tag of the sample's key (`tag(_:)`, migration 0049).
    private(set) var tags: [Int16] = []
    private(set) var sources: [Int16] = []
    /// The sample's position in the batch.
    private(set) var positions: [Int] = []

    /// The positions of the samples in hours that are not settled: for the ingest statement.
    private(set) var unsettled: [Int] = []

    var isEmpty: Bool { types.isEmpty }

    private static let hourMilliseconds: Int64 = 3_600_000

    /// `samples` whose hour starts before `settledBefore`, as hour blocks; `sourceIds`: each
    /// sample's `source_id` (0 for none).
    init(_ samples: SampleColumns, sourceIds: [Int16], settledBefore: Date) {
        let settled = settledBefore.epochMilliseconds
        struct BlockKey: Hashable {
            let type: Int16
            let hourMs: Int64
        }
        var grouped: [BlockKey: [Int]] = [:]
        for position in 0..<samples.count {
            // Block starts are whole minutes: the hour is the floor of the minute's.
            let minuteMs = samples.blockStarts[position].epochMilliseconds
            let hourMs = Self.floor(minuteMs)
            guard hourMs < settled else {
                unsettled.append(position)
                continue
            }
            grouped[BlockKey(type: samples.types[position], hourMs: hourMs), default: []].append(position)
        }
        let ordered = grouped.keys.sorted { ($0.type, $0.hourMs) < ($1.type, $1.hourMs) }
        for block in ordered {
            let batchPositions = grouped[block] ?? []
            // The offset within the hour of each sample, the first sample of each settled key.
            var seen = Set<Int64>(minimumCapacity: batchPositions.count)
            var kept: [(offset: Int32, key: Int64, tag: Int16, position: Int)] = []
            kept.reserveCapacity(batchPositions.count)
            for position in batchPositions {
                let minuteMs = samples.blockStarts[position].epochMilliseconds
                // Below 3,600,000: the minute lies in this hour, the offset (below 60,000) in its minute.
                let offset = Int32(truncatingIfNeeded: minuteMs - block.hourMs) &+ samples.offsets[position]
                let tag = Self.tag(samples.keys[position])
                let key = Self.settledKey(offset: offset, tag: tag)
                if seen.insert(key).inserted { kept.append((offset, key, tag, position)) }
            }
            kept.sort { ($0.offset, $0.key) < ($1.offset, $1.key) }
            types.append(block.type)
            starts.append(Date(timeIntervalSince1970: Double(block.hourMs) / 1000))
            // A batch holds at most `DataManager.maximumBatchSize` (10,000) samples.
            firsts.append(Int32(truncatingIfNeeded: offsets.count + 1))
            lasts.append(Int32(truncatingIfNeeded: offsets.count + kept.count))
            members.append(batchPositions)
            var anyDuration = false, anySource = false
            let wholeSeconds = kept.allSatisfy { $0.offset % 1_000 == 0 }
            var total = 0.0, low = Float.infinity, high = -Float.infinity
            var distinct = Set<Int16>()
            for sample in kept {
                let value = samples.values[sample.position]
                total += Double(value)
                low = min(low, value)
                high = max(high, value)
                distinct.insert(sourceIds[sample.position])
                offsets.append(sample.offset)
                // Below 3,600 when whole seconds: the offset lies in the hour.
                offsetSeconds.append(wholeSeconds ? Int16(truncatingIfNeeded: sample.offset / 1_000) : 0)
                values.append(samples.values[sample.position])
                durations.append(samples.durations[sample.position])
                tags.append(sample.tag)
                sources.append(sourceIds[sample.position])
                positions.append(sample.position)
                anyDuration = anyDuration || samples.durations[sample.position] >= 0
                anySource = anySource || sourceIds[sample.position] != 0
            }
            timed.append(anyDuration)
            sourced.append(anySource)
            inSeconds.append(wholeSeconds)
            totals.append(total)
            lows.append(low)
            highs.append(high)
            // At most one per sample: the bounds fit as the samples' do.
            sourceFirsts.append(Int32(truncatingIfNeeded: blockSources.count + 1))
            blockSources.append(contentsOf: distinct.sorted())
            sourceLasts.append(Int32(truncatingIfNeeded: blockSources.count))
        }
    }

    /// The positions of the samples a block stored: its samples without duplicates.
    func stored(_ block: Int) -> ArraySlice<Int> { positions[Int(firsts[block] - 1)..<Int(lasts[block])] }

    /// `data4help_key_tag` (migration 0049): the key's four 16-bit quarters XOR-ed, less 32,768.
    static func tag(_ key: Int64) -> Int16 {
        Int16(truncatingIfNeeded: ((key ^ key >> 16 ^ key >> 32 ^ key >> 48) & 0xFFFF) - 32_768)
    }

    /// `data4help_settled_key` (migration 0049): the offset (0 up to 3,600,000) in the high 32
    /// bits, the tag plus 32,768 below.
    static func settledKey(offset: Int32, tag: Int16) -> Int64 {
        Int64(offset) << 32 | (Int64(tag) + 32_768)
    }

    private static func floor(_ milliseconds: Int64) -> Int64 {
        let remainder = milliseconds % hourMilliseconds
        return milliseconds - (remainder < 0 ? remainder + hourMilliseconds : remainder)
    }
}

/// The blocks of `HistoryHourBlocks` whose hour holds no block yet, stored as they are, with
/// their days' rollups: the positions of the blocks stored, then the days to count again (as
/// `SampleIngestStatement` returns them). No party event: only imported history, which is
/// announced when its import ends, comes this way. The caller holds the individual's ingest
/// lock, so an hour found empty stays so until the insert.
struct HourBlockInsertStatement: PostgresPreparedStatement {
    static let name = "data4help_insert_hour_blocks"
    static let sql = """
        WITH free AS MATERIALIZED (   -- the blocks whose hour holds no block (an hour block or minute blocks)
            -- and whose window no 8-hour block (migration 0050). One index probe a block: LIMIT
            -- keeps it a probe. As NOT EXISTS, PostgreSQL hashed every block of the individual and
            -- compared each with each hour (3.5 million comparisons for 763 blocks: 370 ms).
            SELECT b.*
            FROM unnest($2::int2[], $3::timestamptz[], $4::int4[], $5::int4[], $6::bool[], $7::bool[],
                        $13::float8[], $14::float4[], $15::float4[], $16::int4[], $17::int4[], $19::bool[])
                WITH ORDINALITY AS b(sample_type, block_start, first, last, timed, sourced, total, low, high, source_first, source_last,
                                     in_seconds, ordinal)
            LEFT JOIN LATERAL (
                SELECT true AS taken FROM sample_blocks s
                WHERE s.individual_id = $1 AND s.sample_type = b.sample_type
                  AND s.block_start >= b.block_start AND s.block_start < b.block_start + interval '1 hour'
                LIMIT 1
            ) o ON true
            LEFT JOIN LATERAL (   -- a primary-key probe
                SELECT true AS taken FROM sample_blocks s
                WHERE s.individual_id = $1 AND s.sample_type = b.sample_type
                  AND s.block_start = date_bin('8 hours', b.block_start, 'epoch') AND s.block_minutes = 480
            ) l ON true
            WHERE o.taken IS NULL AND l.taken IS NULL
        ),
        written AS (
            INSERT INTO sample_blocks (individual_id, sample_type, block_start, block_minutes, offsets_ms, offsets_s, vals, durations_ms, tags, source_ids)
            SELECT $1, f.sample_type, f.block_start, 60,
                   CASE WHEN NOT f.in_seconds THEN $8[f.first:f.last] END, CASE WHEN f.in_seconds THEN $20[f.first:f.last] END,
                   $9[f.first:f.last],
                   CASE WHEN f.timed THEN array_replace($10[f.first:f.last], -1, NULL) END,
                   $11[f.first:f.last], CASE WHEN f.sourced THEN $12[f.first:f.last] END
            FROM free f
        ),
        zone AS (SELECT time_zone AS name FROM individuals WHERE id = $1),
        days AS (   -- the blocks of rolled-up types, each with its day and whether its hour lies in that day
            SELECT f.*, (f.block_start AT TIME ZONE z.name)::date AS day,
                   (f.block_start AT TIME ZONE z.name)::date
                       = ((f.block_start + interval '1 hour' - interval '1 microsecond') AT TIME ZONE z.name)::date AS one_day
            FROM free f, zone z
            WHERE f.sample_type = ANY (ARRAY(SELECT code FROM sample_types WHERE rolled_up))
        ),
        added AS (   -- what each block adds to a day, with its sources
            -- A block whose hour lies in one day adds the figures the caller summed; one whose
            -- hour a midnight cuts (zones such as +05:30) adds its samples one by one.
            SELECT sample_type, day, last - first + 1 AS n, total, low, high, $18[source_first:source_last] AS sources
            FROM days WHERE one_day
            UNION ALL
            SELECT d.sample_type, ((d.block_start + s.offset_ms * interval '1 millisecond') AT TIME ZONE z.name)::date,
                   1, s.val, s.val, s.val, ARRAY[s.source_id]
            FROM days d, zone z
            CROSS JOIN LATERAL unnest($8[d.first:d.last], $9[d.first:d.last], $12[d.first:d.last]) AS s(offset_ms, val, source_id)
            WHERE NOT d.one_day
        ),
        rolled AS (   -- as the ingest statement's: each day of a rolled-up type added to, with every source it now has
            INSERT INTO daily_rollups (individual_id, sample_type, day, sample_count, value_sum, value_min, value_max, source_ids)
            SELECT $1, a.sample_type, a.day, sum(a.n), sum(a.total), min(a.low), max(a.high),
                   ARRAY(SELECT DISTINCT u FROM unnest(data4help_array_cat_agg(a.sources)) AS u ORDER BY u)
            FROM added a
            GROUP BY 1, 2, 3
            \(dailyRollupMerge)
            RETURNING sample_type, day, source_ids
        )
        SELECT (ordinal - 1)::int4, NULL::int2, NULL::text FROM free
        UNION ALL   -- days that now have more than one source: counted again after this statement
        SELECT NULL, sample_type, day::text FROM rolled WHERE cardinality(source_ids) > 1
        """

    typealias Row = (Int32?, Int16?, String?)

    let individualId: Int64
    let blocks: HistoryHourBlocks

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 20)
        bindings.append(individualId)
        bindings.append(blocks.types)
        bindings.append(blocks.starts)
        bindings.append(blocks.firsts)
        bindings.append(blocks.lasts)
        bindings.append(blocks.timed)
        bindings.append(blocks.sourced)
        bindings.append(blocks.offsets)
        bindings.append(blocks.values)
        bindings.append(blocks.durations)
        bindings.append(blocks.tags)
        bindings.append(blocks.sources)
        bindings.append(blocks.totals)
        bindings.append(blocks.lows)
        bindings.append(blocks.highs)
        bindings.append(blocks.sourceFirsts)
        bindings.append(blocks.sourceLasts)
        bindings.append(blocks.blockSources)
        bindings.append(blocks.inSeconds)
        bindings.append(blocks.offsetSeconds)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
    }
}
