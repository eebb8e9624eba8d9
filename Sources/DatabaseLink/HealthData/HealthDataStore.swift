import Data4HelpCore
import Foundation
import Logging
import PostgresNIO

/// Samples of one ingest, column by column (the shape `unnest` binds: one array per column).
package struct SampleColumns: Sendable {
    package var types: [Int16] = []
    /// The UTC minute each sample starts in.
    package var blockStarts: [Date] = []
    /// Milliseconds from the block start to the sample's start.
    package var offsets: [Int32] = []
    package var values: [Float] = []
    /// Milliseconds from start to end; -1 for instant samples.
    package var durations: [Int32] = []
    package var keys: [Int64] = []
    /// The distinct source (device) names of the batch.
    package var sourceNames: [String] = []
    /// Per sample: 0 for none, else 1 + the position of its name in `sourceNames`.
    package var sourceIndexes: [Int16] = []
    private var sourcePositions: [String: Int16] = [:]

    package init() {}

    package var count: Int { types.count }

    /// The samples at `positions`, in that order (the batch's sources kept).
    func selecting(_ positions: [Int]) -> SampleColumns {
        var part = SampleColumns()
        part.sourceNames = sourceNames
        part.sourcePositions = sourcePositions
        part.types = positions.map { types[$0] }
        part.blockStarts = positions.map { blockStarts[$0] }
        part.offsets = positions.map { offsets[$0] }
        part.values = positions.map { values[$0] }
        part.durations = positions.map { durations[$0] }
        part.keys = positions.map { keys[$0] }
        part.sourceIndexes = positions.map { sourceIndexes[$0] }
        return part
    }

    package mutating func append(type: Int16, start: Date, value: Float, durationMs: Int32?, key: Int64, source: String? = nil) {
        if let source {
            if let position = sourcePositions[source] {
                sourceIndexes.append(position)
            } else {
                sourceNames.append(source)
                let position = Int16(clamping: sourceNames.count)
                sourcePositions[source] = position
                sourceIndexes.append(position)
            }
        } else {
            sourceIndexes.append(0)
        }
        let milliseconds = (start.timeIntervalSince1970 * 1000).rounded(.down)
        let minute = (milliseconds / 60_000).rounded(.down) * 60_000
        types.append(type)
        blockStarts.append(Date(timeIntervalSince1970: minute / 1000))
        offsets.append(Int32(milliseconds - minute))
        values.append(value)
        durations.append(durationMs ?? -1)
        keys.append(key)
    }
}

/// Location fixes of one ingest, column by column; NaN stands for an absent accuracy or altitude.
/// Times are milliseconds since the epoch: bound as integers, they reach PostgreSQL exactly
/// (postgres-nio truncates a fractional `Date` to the microsecond below).
package struct LocationColumns: Sendable {
    package var timesMs: [Int64] = []
    package var keys: [Int64] = []
    package var latitudes: [Double] = []
    package var longitudes: [Double] = []
    package var accuracies: [Float] = []
    package var altitudes: [Float] = []

    package init() {}

    package var count: Int { timesMs.count }

    package mutating func append(timeMs: Int64, key: Int64, latitude: Double, longitude: Double, accuracy: Float?, altitude: Float?) {
        timesMs.append(timeMs)
        keys.append(key)
        latitudes.append(latitude)
        longitudes.append(longitude)
        accuracies.append(accuracy ?? .nan)
        altitudes.append(altitude ?? .nan)
    }
}

/// Which items of an ingest were stored for the first time (positions in the columns).
package struct IngestOutcome: Sendable, Equatable {
    package var newSamples: [Int]
    package var newLocations: [Int]
}

/// `sample_blocks`, `location_fixes` and `daily_rollups`: writes of the Data Manager.
package struct HealthDataStore: Sendable {
    let database: Database
    let partitions: PartitionMaintainer

    package init(database: Database, partitions: PartitionMaintainer) {
        self.database = database
        self.partitions = partitions
    }

    /// Stores an individual's samples and fixes in one transaction; returns which were new.
    ///
    /// Duplicates — a key already in the sample's block, or repeated within the batch — are
    /// skipped. Each new sample is merged into its block (its minute's, or its hour's: migration 0032) (kept sorted by offset) and added to
    /// the daily rollup of its day in the individual's time zone (types `sample_types` marks
    /// `rolled_up`) — whole while the day has one source; a day that now has several is counted
    /// again from its samples with one source per minute (migration 0029), in the same
    /// transaction; every active subscribed grant it falls under gets a `party_events` row.
    /// Ingests of one individual are serialised by a transaction-scoped advisory lock, so the
    /// read-merge-write of a block never races; different individuals never wait for each other.
    /// `afterStoring` runs last, in the same transaction, on the samples that were new (perhaps
    /// none: an import's progress commits even with a batch of duplicates); throwing from it
    /// rolls the whole upload back. Without `announce` (imported history) no party event is
    /// written: the import announces what it stored once, when it ends. Samples of an hour that
    /// starts before `wholeHoursBefore` and holds no block yet go into one block of the whole
    /// hour (settled history, migration 0032); nil for uploads, which never start one.
    package func ingest(
        individualId: Int64, samples: SampleColumns, locations: LocationColumns, receivedAt: Date = Date(), announce: Bool = true,
        wholeHoursBefore: Date? = nil,
        afterStoring: (_ readings: [StoredReading], _ transaction: IngestTransaction) async throws -> Void = { _, _ in }
    ) async throws -> IngestOutcome {
        try await partitions.ensure(.sampleBlocks, covering: samples.blockStarts)
        try await partitions.ensure(.locationFixes, covering: locations.timesMs.map { Date(timeIntervalSince1970: Double($0) / 1000) })
        return try await database.withTransaction { connection in
            _ = try await connection.query(
                "SELECT pg_advisory_xact_lock(hashtextextended('data4help.ingest', \(individualId)))",
                logger: database.logger
            )
            var newSamples: [Int] = []
            if samples.count > 0 {
                let sourceIds = try await Self.sourceIds(for: samples, individualId: individualId, on: connection, logger: database.logger)
                var recount: (types: [Int16], days: [String]) = ([], [])
                func note(_ type: Int16?, _ day: String?) {
                    guard let type, let day else { return }
                    recount.types.append(type)
                    recount.days.append(day)
                }
                // Positions of the samples for the ingest statement: all, unless hour blocks of
                // imported history were stored whole first (see `HistoryHourBlocks`).
                var rest = Array(0..<samples.count)
                if !announce, let wholeHoursBefore {
                    let blocks = HistoryHourBlocks(samples, sourceIds: sourceIds, settledBefore: wholeHoursBefore)
                    if !blocks.isEmpty {
                        var written = Array(repeating: false, count: blocks.members.count)
                        for (block, type, day) in try await connection.execute(
                            HourBlockInsertStatement(individualId: individualId, blocks: blocks), logger: database.logger)
                        {
                            note(type, day)
                            guard let block, let index = Int(exactly: block), written.indices.contains(index) else { continue }
                            newSamples.append(contentsOf: blocks.stored(index))
                            written[index] = true
                        }
                        // The samples of hours that held blocks already, and of unsettled hours.
                        let merged = written.indices.filter { !written[$0] }.flatMap { blocks.members[$0] }
                        rest = (blocks.unsettled + merged).sorted()
                    }
                }
                if !rest.isEmpty {
                    let part = rest.count == samples.count ? samples : samples.selecting(rest)
                    let rows = try await connection.execute(
                        SampleIngestStatement(
                            individualId: individualId, samples: part, sourceIds: rest.map { sourceIds[$0] }, announce: announce,
                            wholeHoursBefore: wholeHoursBefore),
                        logger: database.logger
                    )
                    for (ordinals, type, day) in rows {
                        for ordinal in ordinals ?? [] {
                            if let index = Int(exactly: ordinal), rest.indices.contains(index) { newSamples.append(rest[index]) }
                        }
                        note(type, day)
                    }
                }
                if !recount.types.isEmpty {
                    // Days on which several sources now have samples: one source per minute (migration 0029).
                    _ = try await connection.query(
                        """
                        SELECT data4help_recount_days(\(individualId), kind, array_agg(day::date))
                        FROM unnest(\(recount.types)::int2[], \(recount.days)::text[]) AS u(kind, day)
                        GROUP BY kind
                        """, logger: database.logger)
                }
            }
            var newLocations: [Int] = []
            if locations.count > 0 {
                let rows = try await connection.query(
                    Self.locationStatement(individualId: individualId, locations: locations, announce: announce), logger: database.logger)
                for try await ordinal in rows.decode(Int32.self) { newLocations.append(Int(ordinal)) }
            }
            let readings = newSamples.map { index in
                StoredReading(
                    typeCode: samples.types[index], timeMs: samples.blockStarts[index].epochMilliseconds + Int64(samples.offsets[index]),
                    value: samples.values[index], key: samples.keys[index]
                )
            }
            var transaction = IngestTransaction(connection: connection, logger: database.logger, individualId: individualId, receivedAt: receivedAt)
            transaction.newLocations = newLocations.count
            transaction.newLocationSpan = DataSpan(newLocations.map { locations.timesMs[$0] })
            try await afterStoring(readings, transaction)
            return IngestOutcome(newSamples: newSamples.sorted(), newLocations: newLocations.sorted())
        }
    }

    /// Bytes on disk of every sample_blocks partition (heap, TOAST and indexes) and the number of
    /// samples they hold, after a VACUUM: the storage cost the benchmark reports. `packed`: after
    /// `VACUUM FULL` (for benchmarks only: it locks the table), the live rows alone — the space
    /// rewritten and deleted blocks leave is reused by later writes in a running database.
    package func storageFootprint(packed: Bool = false) async throws -> (bytes: Int64, samples: Int64) {
        try await database.query(packed ? "VACUUM FULL ANALYZE sample_blocks" : "VACUUM ANALYZE sample_blocks")
        let rows = try await database.query(
            """
            SELECT (SELECT coalesce(sum(pg_total_relation_size(relid)), 0)::int8 FROM pg_partition_tree('sample_blocks')),
                   (SELECT coalesce(sum(cardinality(vals)), 0)::int8 FROM sample_blocks)
            """)
        return try rows[0].decode((Int64, Int64).self)
    }

    /// Heap, TOAST and index bytes of the daily, weekly and monthly rollups, packed: every upload
    /// rewrites its days' rows, so a fresh table holds mostly space that a long-running one
    /// reuses; `VACUUM FULL` (for benchmarks only: it locks the tables) leaves the live rows.
    package func rollupFootprint() async throws -> Int64 {
        try await database.query("VACUUM FULL daily_rollups, weekly_rollups, monthly_rollups")
        let rows = try await database.query(
            """
            SELECT coalesce(sum(pg_total_relation_size(coalesce(t.relid, r.rel))), 0)::int8
            FROM unnest(ARRAY['daily_rollups', 'weekly_rollups', 'monthly_rollups']::regclass[]) AS r(rel)
            LEFT JOIN LATERAL pg_partition_tree(r.rel) AS t ON true   -- nothing for a table that is not partitioned
            """)
        return try rows[0].decode(Int64.self)
    }

    /// Each sample's `source_id`: names already known to the individual keep their number, new
    /// ones get the next free numbers (safe: the caller holds the individual's ingest lock).
    private static func sourceIds(
        for samples: SampleColumns, individualId: Int64, on connection: LeasedConnection, logger: Logger
    ) async throws -> [Int16] {
        guard !samples.sourceNames.isEmpty else { return samples.sourceIndexes }
        let rows = try await connection.query(
            """
            WITH wanted AS (
                SELECT name, position FROM unnest(\(samples.sourceNames)::text[]) WITH ORDINALITY AS w(name, position)
            ),
            known AS (
                SELECT s.name, s.source_id FROM sample_sources s JOIN wanted w ON w.name = s.name
                WHERE s.individual_id = \(individualId)
            ),
            top AS (SELECT COALESCE(max(source_id), 0) AS id FROM sample_sources WHERE individual_id = \(individualId)),
            added AS (
                INSERT INTO sample_sources (individual_id, source_id, name, priority)
                SELECT \(individualId), top.id + row_number() OVER (ORDER BY w.position), w.name, data4help_default_source_priority(w.name)
                FROM wanted w, top
                WHERE NOT EXISTS (SELECT 1 FROM known k WHERE k.name = w.name)
                RETURNING name, source_id
            )
            SELECT w.position::int4, COALESCE(k.source_id, a.source_id)
            FROM wanted w LEFT JOIN known k ON k.name = w.name LEFT JOIN added a ON a.name = w.name
            """, logger: logger)
        var idByPosition: [Int16: Int16] = [:]
        for try await (position, id) in rows.decode((Int32, Int16).self) { idByPosition[Int16(position)] = id }
        return samples.sourceIndexes.map { $0 == 0 ? 0 : idByPosition[$0] ?? 0 }
    }

    private static func locationStatement(individualId: Int64, locations: LocationColumns, announce: Bool) -> PostgresQuery {
        let ordinals = (0..<Int32(locations.count)).map { $0 }
        return """
            WITH incoming AS (
                SELECT * FROM unnest(\(locations.timesMs)::int8[], \(locations.keys)::int8[], \(locations.latitudes)::float8[],
                                     \(locations.longitudes)::float8[], \(locations.accuracies)::float4[], \(locations.altitudes)::float4[],
                                     \(ordinals)::int4[])
                    AS t(time_ms, key, latitude, longitude, accuracy, altitude, ordinal)
            ),
            inserted AS (
                INSERT INTO location_fixes (individual_id, recorded_at, dedupe_key, latitude, longitude, accuracy, altitude)
                SELECT \(individualId), 'epoch'::timestamptz + time_ms * interval '1 millisecond', key, latitude, longitude,
                       NULLIF(accuracy, 'NaN'::float4), NULLIF(altitude, 'NaN'::float4)
                FROM incoming
                ON CONFLICT DO NOTHING
                RETURNING recorded_at, dedupe_key
            ),
            fresh AS (
                SELECT min(i.ordinal) AS ordinal, i.time_ms, i.key FROM incoming i
                JOIN inserted n ON n.recorded_at = 'epoch'::timestamptz + i.time_ms * interval '1 millisecond' AND n.dedupe_key = i.key
                GROUP BY i.time_ms, i.key
            ),
            events AS (    -- the outbox, as for samples: grants that include 'location'
                INSERT INTO party_events (third_party_id, request_id, individual_id, first_ms, last_ms, kinds, keys)
                SELECT r.third_party_id, r.id, \(individualId), min(f.time_ms), max(f.time_ms), ARRAY['location'], array_agg(f.key)
                FROM access_requests r JOIN fresh f ON true
                WHERE r.individual_id = \(individualId) AND r.subscribe AND access_grant_active(r.status, r.granted_until) AND \(announce)
                  AND access_grant_covers(r.granted_types, r.granted_from, r.granted_to, 'location', f.time_ms)
                GROUP BY r.id, r.third_party_id
            )
            SELECT ordinal FROM fresh
            """
    }
}

/// A block's arrays aggregated from its samples' rows (`offset_ms`, `val`, `duration_ms`, `key`,
/// `source_id`, 0 for no source; `keyless`, `tag`), as every writer of `sample_blocks` writes
/// them: ordered by (offset, key); `durations_ms` and `source_ids` NULL when no sample has one;
/// `keys`, or for a block without keys (migration 0049: its samples' `keyless`; their `key` is
/// then `data4help_settled_key`) `tags`; the offsets in milliseconds, or for a block without keys
/// whose every sample starts on a whole second in seconds (migration 0050). The columns
/// `offsets_ms, offsets_s, vals, durations_ms, keys, source_ids, tags`.
let blockArrays = """
    CASE WHEN bool_and(keyless AND offset_ms % 1000 = 0) THEN NULL ELSE array_agg(offset_ms ORDER BY offset_ms, key) END,
    CASE WHEN bool_and(keyless AND offset_ms % 1000 = 0) THEN array_agg((offset_ms / 1000)::int2 ORDER BY offset_ms, key) END,
    array_agg(val ORDER BY offset_ms, key),
    CASE WHEN bool_and(duration_ms IS NULL) THEN NULL ELSE array_agg(duration_ms ORDER BY offset_ms, key) END,
    CASE WHEN bool_and(keyless) THEN NULL ELSE array_agg(key ORDER BY offset_ms, key) END,
    CASE WHEN bool_and(source_id = 0) THEN NULL ELSE array_agg(source_id ORDER BY offset_ms, key) END,
    CASE WHEN bool_and(keyless) THEN array_agg(tag ORDER BY offset_ms, key) END
    """

/// How a day's rollup takes in the new samples of the day (the `EXCLUDED` row): counts and sums
/// added, extremes kept, sources united.
let dailyRollupMerge = """
    ON CONFLICT (individual_id, sample_type, day) DO UPDATE SET
        sample_count = daily_rollups.sample_count + EXCLUDED.sample_count,
        value_sum    = daily_rollups.value_sum + EXCLUDED.value_sum,
        value_min    = LEAST(daily_rollups.value_min, EXCLUDED.value_min),
        value_max    = GREATEST(daily_rollups.value_max, EXCLUDED.value_max),
        source_ids   = CASE WHEN daily_rollups.source_ids <@ EXCLUDED.source_ids THEN EXCLUDED.source_ids
                            ELSE ARRAY(SELECT DISTINCT u FROM unnest(daily_rollups.source_ids || EXCLUDED.source_ids) AS u ORDER BY u) END
    """

/// One ingest's samples into `sample_blocks`, `daily_rollups` and `party_events` (see
/// `HealthDataStore.ingest`): the new samples' ordinals, then the days to count again. Prepared,
/// as every upload runs it: planning the CTEs over the partitions cost as much as running them
/// (`EXPLAIN ANALYZE`: 0.9 ms of each for a 30-reading upload), and a prepared statement is
/// planned once per connection. The individual is `$1` wherever it appears.
struct SampleIngestStatement: PostgresPreparedStatement {
    static let name = "data4help_ingest_samples"
    static let sql = """
        WITH incoming AS (   -- block_start: the sample's minute
            SELECT *, date_bin('1 hour', t.block_start, 'epoch') AS hour
            FROM unnest($2::int2[], $3::timestamptz[], $4::int4[],
                        $5::float4[], $6::int4[], $7::int8[],
                        $8::int2[], $9::int4[])
                AS t(sample_type, block_start, offset_ms, val, duration_ms, key, source_id, ordinal)
        ),
        hours AS MATERIALIZED (   -- the block each hour's samples go into: its start and length (migrations 0032, 0050)
            -- The 8-hour block of the hour's window, a primary-key probe: it is the only block of
            -- its window, and has no keys. Else the hour's first block, one index probe: an hour
            -- block is the only block of its hour. With neither, the hour is written whole if it is
            -- settled history (before $11). Such a block, when new, has no keys (migration 0049);
            -- an old one may have them.
            SELECT h.sample_type, h.hour,
                   CASE WHEN l.found IS NOT NULL THEN h.window_start WHEN COALESCE(f.block_minutes = 60, h.hour < $11::timestamptz) THEN h.hour END
                       AS whole_start,
                   CASE WHEN l.found IS NOT NULL THEN 480 WHEN COALESCE(f.block_minutes = 60, h.hour < $11::timestamptz) THEN 60 ELSE 1 END::int2
                       AS block_minutes,
                   l.found IS NOT NULL OR COALESCE(f.block_minutes = 60 AND f.keyless, h.hour < $11::timestamptz) AS keyless
            FROM (SELECT DISTINCT sample_type, hour, date_bin('8 hours', hour, 'epoch') AS window_start FROM incoming) h
            LEFT JOIN LATERAL (
                SELECT true AS found FROM sample_blocks b
                WHERE b.individual_id = $1 AND b.sample_type = h.sample_type AND b.block_start = h.window_start AND b.block_minutes = 480
            ) l ON true
            LEFT JOIN LATERAL (
                SELECT b.block_minutes, b.keys IS NULL AS keyless FROM sample_blocks b
                WHERE b.individual_id = $1 AND b.sample_type = h.sample_type
                  AND b.block_start >= h.hour AND b.block_start < h.hour + interval '1 hour'
                ORDER BY b.block_start LIMIT 1
            ) f ON l.found IS NULL
        ),
        placed AS (   -- key: the client's, or in a block without keys its settled key (migration 0049)
            SELECT p.*, CASE WHEN p.keyless THEN data4help_settled_key(p.offset_ms, p.tag) ELSE p.client_key END AS key
            FROM (
                SELECT i.sample_type, COALESCE(h.whole_start, i.block_start) AS block_start,
                       i.offset_ms + COALESCE((extract(epoch FROM i.block_start - h.whole_start) * 1000)::int4, 0) AS offset_ms,
                       i.val, i.duration_ms, i.key AS client_key, i.source_id, i.ordinal, h.block_minutes,
                       h.keyless, data4help_key_tag(i.key) AS tag
                FROM incoming i
                JOIN hours h ON h.sample_type = i.sample_type AND h.hour = i.hour
            ) p
        ),
        unique_incoming AS (
            SELECT DISTINCT ON (sample_type, block_start, key)
                   sample_type, block_start, offset_ms, val, NULLIF(duration_ms, -1) AS duration_ms, key, source_id, ordinal, block_minutes,
                   keyless, tag
            FROM placed
            ORDER BY sample_type, block_start, key, ordinal
        ),
        touched AS MATERIALIZED (   -- the existing blocks this batch writes into: a primary-key probe each
            -- (LIMIT keeps the probe a probe: as a plain join PostgreSQL hashed every block of the
            -- individual, a cost that grew with their history — 2,899 blocks for 529 wanted).
            SELECT b.*
            FROM (SELECT DISTINCT sample_type, block_start FROM unique_incoming) w
            CROSS JOIN LATERAL (
                SELECT b.sample_type, b.block_start, b.offsets_ms, b.offsets_s, b.vals, b.durations_ms, b.keys, b.source_ids, b.tags, b.block_minutes
                FROM sample_blocks b
                WHERE b.individual_id = $1 AND b.sample_type = w.sample_type AND b.block_start = w.block_start
                LIMIT 1
            ) b
        ),
        fresh AS (   -- a sample is new unless its block has its key
            -- NOT IN is a hashed subplan whatever the row estimates (a join here was planned as a
            -- nested loop: 2.9 million comparisons for a batch of 5,431 imported again).
            SELECT u.* FROM unique_incoming u
            WHERE (u.sample_type, u.block_start, u.key) NOT IN (
                SELECT t.sample_type, t.block_start, k.key FROM touched t
                CROSS JOIN LATERAL (
                    SELECT unnest(t.keys) WHERE t.keys IS NOT NULL
                    UNION ALL
                    SELECT data4help_settled_key(data4help_offset(e.offset_ms, e.offset_s), e.tag)
                    FROM unnest(t.offsets_ms, t.offsets_s, t.tags) AS e(offset_ms, offset_s, tag) WHERE t.keys IS NULL
                ) AS k(key))
        ),
        merged AS (   -- the new samples and those of their blocks (`written` keeps blocks with a new one)
            SELECT sample_type, block_start, offset_ms, val, duration_ms, key, source_id, keyless, tag, block_minutes, true AS new FROM fresh
            UNION ALL
            SELECT t.sample_type, t.block_start, e.offset_ms, e.val, e.duration_ms,
                   COALESCE(e.key, data4help_settled_key(e.offset_ms, e.tag)), COALESCE(e.source_id, 0),
                   t.keys IS NULL, e.tag, t.block_minutes, false
            FROM touched t
            CROSS JOIN LATERAL (
                SELECT data4help_offset(u.offset_ms, u.offset_s) AS offset_ms, u.val, u.duration_ms, u.key, u.source_id, u.tag
                FROM unnest(t.offsets_ms, t.offsets_s, t.vals, t.durations_ms, t.keys, t.source_ids, t.tags)
                    AS u(offset_ms, offset_s, val, duration_ms, key, source_id, tag)
            ) AS e
        ),
        written AS (
            INSERT INTO sample_blocks (individual_id, sample_type, block_start, block_minutes, offsets_ms, offsets_s, vals, durations_ms, keys, source_ids, tags)
            SELECT $1, sample_type, block_start, max(block_minutes), \(blockArrays)
            FROM merged
            GROUP BY sample_type, block_start
            HAVING bool_or(new)
            ON CONFLICT (individual_id, sample_type, block_start) DO UPDATE SET
                offsets_ms = EXCLUDED.offsets_ms, offsets_s = EXCLUDED.offsets_s, vals = EXCLUDED.vals, durations_ms = EXCLUDED.durations_ms,
                keys = EXCLUDED.keys, source_ids = EXCLUDED.source_ids, tags = EXCLUDED.tags
        ),
        rolled AS (   -- each day of a rolled-up type this upload adds to, with every source it now has
            INSERT INTO daily_rollups (individual_id, sample_type, day, sample_count, value_sum, value_min, value_max, source_ids)
            -- The zone and the rolled-up types as values computed once, not a join per sample.
            SELECT $1, f.sample_type,
                   ((f.block_start + f.offset_ms * interval '1 millisecond') AT TIME ZONE (SELECT time_zone FROM individuals WHERE id = $1))::date,
                   count(*), sum(f.val), min(f.val), max(f.val), array_agg(DISTINCT f.source_id ORDER BY f.source_id)
            FROM fresh f
            WHERE f.sample_type = ANY (ARRAY(SELECT code FROM sample_types WHERE rolled_up))
            GROUP BY 1, 2, 3
            \(dailyRollupMerge)
            RETURNING sample_type, day, source_ids
        ),
        subscriptions AS (   -- index: access_requests_subscriptions_idx
            SELECT r.id, r.third_party_id, r.granted_types, r.granted_from, r.granted_to
            FROM access_requests r
            WHERE r.individual_id = $1 AND r.subscribe AND access_grant_active(r.status, r.granted_until) AND $10
        ),
        per_type AS MATERIALIZED (   -- the new samples of each type; read only for a subscribed grant
            -- Each sample named by its event key (migration 0049), which compaction does not change.
            SELECT t.name, min(f.start_ms) AS first_ms, max(f.start_ms) AS last_ms, array_agg(data4help_event_key(f.start_ms, f.tag)) AS keys
            FROM (SELECT sample_type, tag, (extract(epoch FROM block_start) * 1000)::int8 + offset_ms AS start_ms FROM fresh) f
            JOIN sample_types t ON t.code = f.sample_type
            GROUP BY t.name
        ),
        events AS (    -- the outbox: one event per subscribed grant that this upload gave new data
            INSERT INTO party_events (third_party_id, request_id, individual_id, first_ms, last_ms, kinds, keys)
            -- A grant of whole types takes each granted type's new samples as they are: the
            -- upload's samples are gone through once, not once per grant (5 grants, 1,000
            -- samples: 33–36 → 21–24 ms a statement).
            SELECT s.third_party_id, s.id, $1, e.first_ms, e.last_ms, e.kinds, e.keys
            FROM subscriptions s
            CROSS JOIN LATERAL (
                SELECT min(p.first_ms) AS first_ms, max(p.last_ms) AS last_ms, array_agg(p.name ORDER BY p.name) AS kinds,
                       data4help_array_cat_agg(p.keys) AS keys
                FROM per_type p WHERE p.name = ANY (s.granted_types)
            ) e
            WHERE s.granted_from IS NULL AND s.granted_to IS NULL AND e.kinds IS NOT NULL
            UNION ALL
            -- A grant with a window of time takes the samples inside it.
            SELECT s.third_party_id, s.id, $1, e.first_ms, e.last_ms, e.kinds, e.keys
            FROM subscriptions s
            CROSS JOIN LATERAL (
                SELECT min(f.start_ms) AS first_ms, max(f.start_ms) AS last_ms, array_agg(DISTINCT t.name) AS kinds,
                       array_agg(data4help_event_key(f.start_ms, f.tag)) AS keys
                FROM (SELECT *, (extract(epoch FROM block_start) * 1000)::int8 + offset_ms AS start_ms FROM fresh) f
                JOIN sample_types t ON t.code = f.sample_type
                WHERE access_grant_covers(s.granted_types, s.granted_from, s.granted_to, t.name, f.start_ms)
            ) e
            WHERE (s.granted_from IS NOT NULL OR s.granted_to IS NOT NULL) AND e.kinds IS NOT NULL
        )
        -- The new samples' ordinals as one array: a row per sample cost the database a message
        -- and the server a row to decode, for each of up to thousands of samples.
        SELECT (SELECT array_agg(ordinal) FROM fresh), NULL::int2, NULL::text
        UNION ALL   -- days that now have more than one source: counted again from their samples after this statement
        SELECT NULL, sample_type, day::text FROM rolled WHERE cardinality(source_ids) > 1
        """

    typealias Row = ([Int32]?, Int16?, String?)

    let individualId: Int64
    let samples: SampleColumns
    let sourceIds: [Int16]
    let announce: Bool
    /// Hours starting before this that hold no block yet get an hour block (history); nil: none.
    let wholeHoursBefore: Date?

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 11)
        bindings.append(individualId)
        bindings.append(samples.types)
        bindings.append(samples.blockStarts)
        bindings.append(samples.offsets)
        bindings.append(samples.values)
        bindings.append(samples.durations)
        bindings.append(samples.keys)
        bindings.append(sourceIds)
        bindings.append((0..<Int32(samples.count)).map { $0 })
        bindings.append(announce)
        bindings.append(wholeHoursBefore ?? .distantPast)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
    }
}
