-- Settled hour blocks keep their offsets in whole seconds, two bytes each (issue 27: 8 bytes a
-- sample).
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
-- keys (an hour block, migration 0049) whose every sample starts on a whole second; every other
-- block, and an hour block once a sample with a fraction of a second joins it, has `offsets_ms`.
-- Readers unnest both and take data4help_offset of the pair. The compactor (SampleCompactor)
-- moves existing hour blocks whose offsets are whole seconds online, from its next pass on, which
-- goes over all history once (compacted_before is reset here; the same caveat for instances of the
-- previous release as in migration 0049).
ALTER TABLE sample_blocks ALTER COLUMN offsets_ms DROP NOT NULL;
ALTER TABLE sample_blocks ADD COLUMN offsets_s smallint[];

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
-- (migration 0049) or whose millisecond offsets are whole seconds. Inlined by the planner.
CREATE FUNCTION data4help_compactable(block_minutes int2, keys int8[], offsets_ms int4[]) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT block_minutes = 1 OR keys IS NOT NULL OR data4help_whole_seconds(offsets_ms)
$$;

UPDATE sample_compaction SET compacted_before = '-infinity', pass_before = NULL, pass_after = 0;

-- The functions that unnest blocks (their last definitions: migrations 0032, 0041 and 0049), now
-- reading either offset column.
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
        JOIN sample_blocks b ON b.individual_id = individual AND b.sample_type = kind
                            AND b.block_start > d.first_start - interval '1 hour' AND b.block_start < d.last_end
                            AND (b.block_start >= d.first_start OR b.block_minutes = 60)
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
                FROM sample_blocks b
                CROSS JOIN LATERAL unnest(b.offsets_ms, b.offsets_s, b.vals, b.source_ids) AS u(offset_ms, offset_s, val, source_id)
                WHERE b.individual_id = individual AND b.sample_type = kind
                  AND b.block_start > lo - interval '1 hour' AND b.block_start < hi
                  AND (b.block_start >= date_trunc('minute', lo) OR b.block_minutes = 60)
            ) x
            WHERE x.start >= lo AND x.start < hi;
    END IF;
END
$$;

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

CREATE OR REPLACE FUNCTION data4help_samples_page(
    newest_first boolean,
    person int8, types int2[], low_minute_ms int8, low_hour_ms int8, high_minute_ms int8, high_hour_ms int8,
    page_size int8, lower_ms int8, upper_ms int8, cursor_start_ms int8, cursor_type int2, cursor_key int8
) RETURNS TABLE (sample_type int2, start_ms int8, val real, duration_ms int4, key int8, source text)
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    low_minute timestamptz := 'epoch'::timestamptz + low_minute_ms * interval '1 millisecond';
    low_hour timestamptz := 'epoch'::timestamptz + low_hour_ms * interval '1 millisecond';
    high_minute timestamptz := 'epoch'::timestamptz + high_minute_ms * interval '1 millisecond';
    high_hour timestamptz := 'epoch'::timestamptz + high_hour_ms * interval '1 millisecond';
    -- Within an instant and type, keys order as their tags (data4help_settled_key): the page is
    -- cut and sorted by tag, and each row's key computed after the cut.
    cursor_tag int2 := ((cursor_key & 65535) - 32768)::int2;
BEGIN
    IF newest_first THEN
        RETURN QUERY
        WITH boundary AS (
            SELECT b.block_start FROM sample_blocks AS b
            WHERE b.individual_id = person AND b.sample_type = ANY (types)
              AND b.block_start >= low_hour AND b.block_start <= high_minute
              AND b.block_start >= low_minute AND b.block_start < high_minute
              AND NOT (b.block_minutes = 60 AND b.block_start = high_hour)
            ORDER BY b.block_start DESC
            OFFSET page_size LIMIT 1
        ),
        candidates AS (
            SELECT b.sample_type, (extract(epoch FROM b.block_start) * 1000)::int8 + data4help_offset(u.offset_ms, u.offset_s) AS start_ms,
                   u.val, u.duration_ms, COALESCE(u.tag, data4help_key_tag(u.key)) AS tag, u.source_id
            FROM sample_blocks AS b
            CROSS JOIN LATERAL unnest(b.offsets_ms, b.offsets_s, b.vals, b.durations_ms, b.keys, b.source_ids, b.tags)
                AS u(offset_ms, offset_s, val, duration_ms, key, source_id, tag)
            WHERE b.individual_id = person AND b.sample_type = ANY (types)
              AND b.block_start >= low_hour AND b.block_start <= high_minute
              AND b.block_start >= GREATEST(low_hour, COALESCE((SELECT block_start FROM boundary), '-infinity'))
              AND b.block_start <= high_minute
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
              AND b.block_start >= low_hour AND b.block_start <= high_minute
              AND b.block_start > low_minute AND b.block_start <= high_minute
            ORDER BY b.block_start
            OFFSET page_size LIMIT 1
        ),
        candidates AS (
            SELECT b.sample_type, (extract(epoch FROM b.block_start) * 1000)::int8 + data4help_offset(u.offset_ms, u.offset_s) AS start_ms,
                   u.val, u.duration_ms, COALESCE(u.tag, data4help_key_tag(u.key)) AS tag, u.source_id
            FROM sample_blocks AS b
            CROSS JOIN LATERAL unnest(b.offsets_ms, b.offsets_s, b.vals, b.durations_ms, b.keys, b.source_ids, b.tags)
                AS u(offset_ms, offset_s, val, duration_ms, key, source_id, tag)
            WHERE b.individual_id = person AND b.sample_type = ANY (types)
              AND b.block_start >= low_hour AND b.block_start <= high_minute
              AND b.block_start <= LEAST(high_minute, COALESCE((SELECT block_start FROM boundary), 'infinity'))
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
