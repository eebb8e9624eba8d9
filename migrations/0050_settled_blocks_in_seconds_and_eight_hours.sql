-- Settled blocks keep their offsets in whole seconds, and sparse settled history goes into
-- 8-hour blocks (issue 27: 8 bytes a sample).
--
-- Offsets in seconds.
--
-- After migration 0049 an hour block at 1 Hz costs 8.1 bytes a sample (`bench storage`,
-- 2026-11-28): 4.0 of them the offsets, `integer` milliseconds that neither pglz nor lz4
-- compresses (no three bytes repeat when readings are 1,000 ms apart). Devices and exports time
-- their readings in whole seconds (an Apple Health export has no finer unit), and an hour has
-- 3,600 of them: a `smallint` holds an hour block's offset in seconds. Measured on a scratch
-- cluster with the bench's Apple Watch pattern (40 people × 14 days, a reading every 5 minutes
-- and every 5 s in a 45-minute workout): hour blocks 14.8 → 12.6 bytes a sample.
--
-- A block holds either `offsets_ms` (milliseconds since block_start) or `offsets_s` (seconds
-- since block_start, NULL when not used), never both. `offsets_s` is written for a block without
-- keys (an hour or 8-hour block, migration 0049) whose every sample starts on a whole second;
-- every other block, and such a block once a sample with a fraction of a second joins it, has
-- `offsets_ms`. Readers unnest both and take data4help_offset of the pair.
--
-- Sparse settled history in 8-hour blocks.
--
-- With offsets in seconds, an Apple Watch's settled heart rate (a reading every 5 minutes, every 5 s
-- in a 45-minute workout) costs 12.9–13.0 bytes a reading (`bench storage`, 2026-11-28): an hour
-- block holds 12 readings in 23 hours of 24, and a row costs ~170 bytes whatever it holds (tuple
-- and array headers, two index entries). Measured on a scratch cluster with that pattern (40
-- people × 14 days): hour blocks with offsets in seconds 12.6 bytes a reading; day blocks 9.1
-- (86,400 seconds do not fit a smallint: their offsets take 4 bytes); 8-hour blocks 7.6.
--
-- A block now covers [block_start, block_start + block_minutes) with block_minutes 1, 60 (a UTC
-- hour) or 480 (one of the UTC day's thirds, 00:00, 08:00, 16:00: date_bin('8 hours', …, 'epoch')).
-- The rule that keeps every reader right, extended: within one individual, type and 8-hour window
-- there is either one 8-hour block or only hour and minute blocks (within an hour, either one hour
-- block or only minute blocks) — so a sample still has exactly one block it belongs in.
--   * The compactor (SampleCompactor) writes a settled window's samples of a type as one 8-hour
--     block when they are at most 3,600 (an hour of 1 Hz: no row larger than a dense hour block),
--     else as hour blocks. It takes whole windows (every block of a window that holds a block to
--     rewrite), and only windows wholly before its horizon.
--   * An upload or import sample goes into the 8-hour block of its window if there is one, else
--     as before (its hour block, or a new hour block for settled history, or its minute block).
-- Offsets in an 8-hour block are from its start: below 28,800 seconds (a smallint) and 28,800,000
-- ms. Readers of a time range read the blocks that start in it and, per type, the one block that
-- starts before it and ends after it (data4help_blocks_across).
--
-- Existing data moves online: the compactor's next pass goes over all history once
-- (compacted_before is reset here; the same caveat for instances of the previous release as in
-- migration 0049) and rewrites the windows holding an hour block whose offsets are whole seconds
-- in milliseconds or with fewer than 450 samples (an 8th of 3,600): into 8-hour blocks where the
-- window is sparse, else into hour blocks again. The constraint is added NOT VALID: every
-- existing row satisfies it, and validating would read the whole table under the migration's
-- lock.
ALTER TABLE sample_blocks ALTER COLUMN offsets_ms DROP NOT NULL;
ALTER TABLE sample_blocks ADD COLUMN offsets_s smallint[];
ALTER TABLE sample_blocks DROP CONSTRAINT sample_blocks_minutes_check;
ALTER TABLE sample_blocks ADD CONSTRAINT sample_blocks_minutes_check CHECK (
    block_minutes = 1
    OR (block_minutes = 60 AND extract(epoch FROM block_start - 'epoch'::timestamptz) % 3600 = 0)
    OR (block_minutes = 480 AND extract(epoch FROM block_start - 'epoch'::timestamptz) % 28800 = 0)
) NOT VALID;

-- A sample's offset in milliseconds from a block's two offset columns as unnested together (one
-- of the two is NULL). Inlined by the planner.
CREATE FUNCTION data4help_offset(offset_ms int4, offset_s int2) RETURNS int4
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT COALESCE(offset_ms, offset_s * 1000)
$$;

-- Whether an hour block's millisecond offsets could be kept in seconds (the compactor's test of
-- the blocks it rewrites).
CREATE FUNCTION data4help_whole_seconds(offsets_ms int4[]) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT COALESCE(bool_and(o % 1000 = 0), false) FROM unnest(offsets_ms) AS o
$$;

-- Whether the compactor rewrites a block: a minute block, an hour block that still has keys
-- (migration 0049), whose millisecond offsets are whole seconds, or of fewer than 450 samples
-- (an 8th of 3,600: its window may go into an 8-hour block), or an 8-hour block grown past
-- 3,600 samples (uploads or an import of dense data into its window since: its window goes back
-- into hour blocks). Inlined by the planner.
CREATE FUNCTION data4help_compactable(block_minutes int2, keys int8[], offsets_ms int4[], samples int4) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT block_minutes = 1 OR keys IS NOT NULL OR data4help_whole_seconds(offsets_ms)
           OR (block_minutes = 60 AND samples < 450) OR (block_minutes = 480 AND samples > 3600)
$$;

-- The block of each of `types` that starts before `at` and ends after it, if any: at most one
-- per type, as blocks do not overlap; one index probe per type (the newest block before `at`).
-- Readers of a time range read the blocks that start in it and these, so that a long block
-- starting up to 8 hours before the range is read without reading the minute blocks in between.
-- Inlined by the planner into the statement that calls it.
CREATE FUNCTION data4help_blocks_across(person int8, types int2[], at timestamptz) RETURNS SETOF sample_blocks
LANGUAGE sql STABLE AS $$
    SELECT s.* FROM unnest(types) AS t(code)
    CROSS JOIN LATERAL (
        SELECT * FROM sample_blocks b
        WHERE b.individual_id = person AND b.sample_type = t.code AND b.block_start < at AND b.block_start > at - interval '8 hours'
        ORDER BY b.block_start DESC LIMIT 1
    ) s
    WHERE s.block_start + s.block_minutes * interval '1 minute' > at
$$;

UPDATE sample_compaction SET compacted_before = '-infinity', pass_before = NULL, pass_after = 0;

-- The functions that unnest blocks (their last definitions: migrations 0032, 0041 and 0049), now
-- reading either offset column; those that read a time range read the blocks that start in it
-- and the one across its start (data4help_blocks_across). The listing function's bounds change
-- (the hour bounds go), so it is dropped and created again.
CREATE OR REPLACE FUNCTION data4help_rebuild_rollups(individual bigint) RETURNS void LANGUAGE sql AS $$
    SELECT pg_advisory_xact_lock(hashtextextended('data4help.ingest', individual));
    DELETE FROM resting_heart_rates WHERE individual_id = individual;
    DELETE FROM daily_rollups WHERE individual_id = individual;
    INSERT INTO daily_rollups (individual_id, sample_type, day, sample_count, value_sum, value_min, value_max, source_ids)
    SELECT b.individual_id, b.sample_type,
           ((b.block_start + data4help_offset(u.offset_ms, u.offset_s) * interval '1 millisecond') AT TIME ZONE i.time_zone)::date,
           count(*), sum(u.val), min(u.val), max(u.val), array_agg(DISTINCT COALESCE(u.source_id, 0)::int2 ORDER BY COALESCE(u.source_id, 0)::int2)
    FROM sample_blocks b
    JOIN individuals i ON i.id = b.individual_id
    CROSS JOIN LATERAL unnest(b.offsets_ms, b.offsets_s, b.vals, b.source_ids) AS u(offset_ms, offset_s, val, source_id)
    WHERE b.individual_id = individual
      AND b.sample_type IN (SELECT code FROM sample_types WHERE rolled_up)
    GROUP BY 1, 2, 3;
    SELECT data4help_recount_multi_source_days(individual);
    INSERT INTO daily_rollups (individual_id, sample_type, day, sample_count, value_sum, value_min, value_max)
    SELECT individual, 14, (w.started_at AT TIME ZONE i.time_zone)::date, count(*),
           sum(extract(epoch FROM w.ended_at - w.started_at) / 60), min(extract(epoch FROM w.ended_at - w.started_at) / 60),
           max(extract(epoch FROM w.ended_at - w.started_at) / 60)
    FROM workouts w JOIN individuals i ON i.id = w.individual_id
    WHERE w.individual_id = individual
    GROUP BY 1, 2, 3;
$$;

CREATE OR REPLACE FUNCTION data4help_source_shares(individual bigint, kind smallint, lo timestamptz, hi timestamptz)
RETURNS TABLE (start timestamptz, val real, share float8, source_id smallint)
LANGUAGE sql STABLE AS $$
    WITH zone AS (SELECT time_zone FROM individuals WHERE id = individual),
    days AS (
        SELECT z.time_zone,
               ((lo AT TIME ZONE z.time_zone)::date::timestamp AT TIME ZONE z.time_zone) AS first_start,
               (((hi - interval '1 millisecond') AT TIME ZONE z.time_zone)::date + 1)::timestamp AT TIME ZONE z.time_zone AS last_end
        FROM zone z
    ),
    samples AS (
        SELECT row_number() OVER () AS n,
               b.block_start + data4help_offset(u.offset_ms, u.offset_s) * interval '1 millisecond' AS start,
               u.val, COALESCE(u.duration_ms, 0) AS duration_ms, COALESCE(u.source_id, 0)::int2 AS source_id,
               COALESCE(s.priority, 32767)::int4 * 65536 + COALESCE(u.source_id, 0) AS rank,
               d.time_zone
        FROM days d
        CROSS JOIN LATERAL (
            SELECT * FROM sample_blocks b
            WHERE b.individual_id = individual AND b.sample_type = kind AND b.block_start >= d.first_start AND b.block_start < d.last_end
            UNION ALL
            SELECT * FROM data4help_blocks_across(individual, ARRAY[kind], d.first_start)
        ) b
        CROSS JOIN LATERAL unnest(b.offsets_ms, b.offsets_s, b.vals, b.durations_ms, b.source_ids) AS u(offset_ms, offset_s, val, duration_ms, source_id)
        LEFT JOIN sample_sources s ON s.individual_id = individual AND s.source_id = u.source_id
    ),
    claims AS (   -- the minutes each sample covers, cut at the end of its local day
        SELECT s.n, s.rank, m.minute
        FROM samples s
        CROSS JOIN LATERAL generate_series(
            date_trunc('minute', s.start),
            LEAST(s.start + GREATEST(s.duration_ms - 1, 0) * interval '1 millisecond',
                  (((s.start AT TIME ZONE s.time_zone)::date + 1)::timestamp AT TIME ZONE s.time_zone) - interval '1 millisecond'),
            interval '1 minute') AS m(minute)
    ),
    owners AS (SELECT minute, min(rank) AS rank FROM claims GROUP BY minute),
    shares AS (
        SELECT c.n, avg((c.rank = o.rank)::int4)::float8 AS share
        FROM claims c JOIN owners o USING (minute)
        GROUP BY c.n
    )
    SELECT s.start, s.val, sh.share, s.source_id
    FROM samples s JOIN shares sh USING (n)
    WHERE s.start >= lo AND s.start < hi
$$;

CREATE OR REPLACE FUNCTION data4help_counted_samples(individual bigint, kind smallint, lo timestamptz, hi timestamptz)
RETURNS TABLE (start timestamptz, val real, share float8, source_id smallint)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    zone text := (SELECT time_zone FROM individuals WHERE id = individual);
BEGIN
    IF EXISTS (
        SELECT 1 FROM daily_rollups r
        WHERE r.individual_id = individual AND r.sample_type = kind AND cardinality(r.source_ids) > 1
          AND r.day >= (lo AT TIME ZONE zone)::date AND r.day <= ((hi - interval '1 millisecond') AT TIME ZONE zone)::date
    ) THEN
        RETURN QUERY SELECT * FROM data4help_source_shares(individual, kind, lo, hi);
    ELSE
        RETURN QUERY
            SELECT x.start, x.val, 1::float8, x.source_id
            FROM (
                SELECT b.block_start + data4help_offset(u.offset_ms, u.offset_s) * interval '1 millisecond' AS start, u.val, COALESCE(u.source_id, 0)::int2 AS source_id
                FROM (
                    SELECT * FROM sample_blocks b
                    WHERE b.individual_id = individual AND b.sample_type = kind AND b.block_start >= lo AND b.block_start < hi
                    UNION ALL
                    SELECT * FROM data4help_blocks_across(individual, ARRAY[kind], lo)
                ) b
                CROSS JOIN LATERAL unnest(b.offsets_ms, b.offsets_s, b.vals, b.source_ids) AS u(offset_ms, offset_s, val, source_id)
            ) x
            WHERE x.start >= lo AND x.start < hi;
    END IF;
END
$$;

DROP FUNCTION data4help_samples_page(boolean, int8, int2[], int8, int8, int8, int8, int8, int8, int8, int8, int2, int8);

CREATE FUNCTION data4help_samples_page(
    newest_first boolean,
    person int8, types int2[], low_minute_ms int8, high_minute_ms int8,
    page_size int8, lower_ms int8, upper_ms int8, cursor_start_ms int8, cursor_type int2, cursor_key int8
) RETURNS TABLE (sample_type int2, start_ms int8, val real, duration_ms int4, key int8, source text)
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    low_minute timestamptz := 'epoch'::timestamptz + low_minute_ms * interval '1 millisecond';
    high_minute timestamptz := 'epoch'::timestamptz + high_minute_ms * interval '1 millisecond';
    -- Within an instant and type, keys order as their tags (data4help_settled_key): the page is
    -- cut and sorted by tag, and each row's key computed after the cut.
    cursor_tag int2 := ((cursor_key & 65535) - 32768)::int2;
BEGIN
    IF newest_first THEN
        RETURN QUERY
        WITH boundary AS (
            SELECT b.block_start FROM sample_blocks AS b
            WHERE b.individual_id = person AND b.sample_type = ANY (types)
              AND b.block_start >= low_minute AND b.block_start < high_minute
              AND b.block_start + b.block_minutes * interval '1 minute' <= high_minute   -- no sample after the window
            ORDER BY b.block_start DESC
            OFFSET page_size LIMIT 1
        ),
        candidates AS (
            SELECT b.sample_type, (extract(epoch FROM b.block_start) * 1000)::int8 + data4help_offset(u.offset_ms, u.offset_s) AS start_ms,
                   u.val, u.duration_ms, COALESCE(u.tag, data4help_key_tag(u.key)) AS tag, u.source_id
            FROM (
                SELECT * FROM sample_blocks AS b
                WHERE b.individual_id = person AND b.sample_type = ANY (types)
                  AND b.block_start >= low_minute AND b.block_start <= high_minute
                  AND b.block_start >= GREATEST(low_minute, COALESCE((SELECT block_start FROM boundary), '-infinity'))
                UNION ALL   -- needed only when the page reaches back to the window's start
                SELECT * FROM data4help_blocks_across(person, types, low_minute) WHERE NOT EXISTS (SELECT FROM boundary)
            ) AS b
            CROSS JOIN LATERAL unnest(b.offsets_ms, b.offsets_s, b.vals, b.durations_ms, b.keys, b.source_ids, b.tags)
                AS u(offset_ms, offset_s, val, duration_ms, key, source_id, tag)
        )
        SELECT p.sample_type, p.start_ms, p.val, p.duration_ms, data4help_settled_key(data4help_hour_offset(p.start_ms), p.tag), s.name
        FROM (
            SELECT c.* FROM candidates AS c
            WHERE c.start_ms >= lower_ms AND c.start_ms < upper_ms
              AND (c.start_ms, c.sample_type, c.tag) < (cursor_start_ms, cursor_type, cursor_tag)
            ORDER BY c.start_ms DESC, c.sample_type DESC, c.tag DESC
            LIMIT page_size
        ) AS p
        LEFT JOIN sample_sources AS s ON s.individual_id = person AND s.source_id = p.source_id
        ORDER BY p.start_ms DESC, p.sample_type DESC, p.tag DESC;
    ELSE
        RETURN QUERY
        WITH boundary AS (
            SELECT b.block_start FROM sample_blocks AS b
            WHERE b.individual_id = person AND b.sample_type = ANY (types)
              AND b.block_start > low_minute AND b.block_start <= high_minute
            ORDER BY b.block_start
            OFFSET page_size LIMIT 1
        ),
        candidates AS (
            SELECT b.sample_type, (extract(epoch FROM b.block_start) * 1000)::int8 + data4help_offset(u.offset_ms, u.offset_s) AS start_ms,
                   u.val, u.duration_ms, COALESCE(u.tag, data4help_key_tag(u.key)) AS tag, u.source_id
            FROM (
                SELECT * FROM sample_blocks AS b
                WHERE b.individual_id = person AND b.sample_type = ANY (types)
                  AND b.block_start >= low_minute AND b.block_start <= high_minute
                  AND b.block_start <= LEAST(high_minute, COALESCE((SELECT block_start FROM boundary), 'infinity'))
                UNION ALL
                SELECT * FROM data4help_blocks_across(person, types, low_minute)
            ) AS b
            CROSS JOIN LATERAL unnest(b.offsets_ms, b.offsets_s, b.vals, b.durations_ms, b.keys, b.source_ids, b.tags)
                AS u(offset_ms, offset_s, val, duration_ms, key, source_id, tag)
        )
        SELECT p.sample_type, p.start_ms, p.val, p.duration_ms, data4help_settled_key(data4help_hour_offset(p.start_ms), p.tag), s.name
        FROM (
            SELECT c.* FROM candidates AS c
            WHERE c.start_ms >= lower_ms AND c.start_ms < upper_ms
              AND (c.start_ms, c.sample_type, c.tag) > (cursor_start_ms, cursor_type, cursor_tag)
            ORDER BY c.start_ms ASC, c.sample_type ASC, c.tag ASC
            LIMIT page_size
        ) AS p
        LEFT JOIN sample_sources AS s ON s.individual_id = person AND s.source_id = p.source_id
        ORDER BY p.start_ms ASC, p.sample_type ASC, p.tag ASC;
    END IF;
END
$$;
