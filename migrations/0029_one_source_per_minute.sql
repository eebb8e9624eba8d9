-- One source per type and minute in summaries, charts and aggregates.
--
-- An iPhone and an Apple Watch both count the steps of the same walk; an import of both exports'
-- records, or an app that uploads from both, must not count that walk twice. Every sample is
-- kept with its source (listings, exports and deliveries show all of them). What summaries,
-- charts and aggregates count follows the rule of Apple's own statistics:
--   * each minute of a type on a local day belongs to one source: the individual's most
--     preferred source with a sample covering that minute (an instant covers the minute it falls
--     in; an interval every minute from its start to its end, cut at the end of its local day);
--   * a sample counts in proportion to the minutes it covers that belong to its source: a phone's
--     ten-minute step count of which the watch covers five counts half; a heart-rate reading in
--     a minute the watch also measured does not count;
--   * with one source on a day every sample counts whole, and nothing extra is computed.
-- Counts are of the samples that count at all; sums are of their counted shares.

-- Preference, lower first. Sources the individual has not put in order get a default by their
-- name: worn devices 100, phones 200, anything else 300. Samples naming no source come after
-- every named one (32767).
CREATE FUNCTION data4help_default_source_priority(name text) RETURNS smallint LANGUAGE sql IMMUTABLE AS $$
    SELECT (CASE
        WHEN name ~* '\m(watch|ring|band|strap)\M|garmin|polar|fitbit|whoop|oura|wahoo|suunto|coros|amazfit|withings' THEN 100
        WHEN name ~* 'phone|pixel|galaxy|android' THEN 200
        ELSE 300
    END)::smallint
$$;

ALTER TABLE sample_sources ADD COLUMN priority smallint;
UPDATE sample_sources SET priority = data4help_default_source_priority(name);
ALTER TABLE sample_sources ALTER COLUMN priority SET NOT NULL;
-- Whether the individual set it (PUT /api/users/sources/order) or it is the default.
ALTER TABLE sample_sources ADD COLUMN ordered_by_individual boolean NOT NULL DEFAULT false;

-- The sources with samples on the day (0: none named). Ingest adds to a day whole only while it
-- has one source; a day with several is counted again from its samples.
ALTER TABLE daily_rollups ADD COLUMN source_ids smallint[] NOT NULL DEFAULT '{}';

-- The samples of one individual and type starting in [lo, hi), each with the share of it that
-- counts (see above), always comparing sources. Reads the whole local days around the window,
-- since a sample's minutes are compared with every other sample of its day.
CREATE FUNCTION data4help_source_shares(individual bigint, kind smallint, lo timestamptz, hi timestamptz)
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
               b.block_start + u.offset_ms * interval '1 millisecond' AS start,
               u.val, COALESCE(u.duration_ms, 0) AS duration_ms, COALESCE(u.source_id, 0)::int2 AS source_id,
               COALESCE(s.priority, 32767)::int4 * 65536 + COALESCE(u.source_id, 0) AS rank,
               d.time_zone
        FROM days d
        JOIN sample_blocks b ON b.individual_id = individual AND b.sample_type = kind
                            AND b.block_start >= d.first_start AND b.block_start < d.last_end
        CROSS JOIN LATERAL unnest(b.offsets_ms, b.vals, b.durations_ms, b.source_ids) AS u(offset_ms, val, duration_ms, source_id)
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

-- The same, but without comparing when no day of the window has more than one source (the usual
-- case: then every sample counts whole). For reads over sample blocks (hourly summaries).
CREATE FUNCTION data4help_counted_samples(individual bigint, kind smallint, lo timestamptz, hi timestamptz)
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
                SELECT b.block_start + u.offset_ms * interval '1 millisecond' AS start, u.val, COALESCE(u.source_id, 0)::int2 AS source_id
                FROM sample_blocks b
                CROSS JOIN LATERAL unnest(b.offsets_ms, b.vals, b.source_ids) AS u(offset_ms, val, source_id)
                WHERE b.individual_id = individual AND b.sample_type = kind
                  AND b.block_start >= date_trunc('minute', lo) AND b.block_start < hi
            ) x
            WHERE x.start >= lo AND x.start < hi;
    END IF;
END
$$;

-- Counts the given local days of one type again from their samples, comparing sources. The
-- statement triggers on daily_rollups keep the weekly and monthly totals in step.
CREATE FUNCTION data4help_recount_days(individual bigint, kind smallint, days date[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    zone text := (SELECT time_zone FROM individuals WHERE id = individual);
BEGIN
    DELETE FROM daily_rollups WHERE individual_id = individual AND sample_type = kind AND day = ANY (days);
    INSERT INTO daily_rollups (individual_id, sample_type, day, sample_count, value_sum, value_min, value_max, source_ids)
    SELECT individual, kind, d.day,
           count(*) FILTER (WHERE c.share > 0), COALESCE(sum(c.val * c.share), 0),
           min(c.val) FILTER (WHERE c.share > 0), max(c.val) FILTER (WHERE c.share > 0),
           array_agg(DISTINCT c.source_id ORDER BY c.source_id)
    FROM (SELECT DISTINCT unnest(days) AS day) d
    CROSS JOIN LATERAL data4help_source_shares(
        individual, kind, d.day::timestamp AT TIME ZONE zone, (d.day + 1)::timestamp AT TIME ZONE zone) c
    GROUP BY d.day;
END
$$;

-- Every day of an individual on which more than one source has samples, counted again: after
-- the individual changes the order of their sources.
CREATE FUNCTION data4help_recount_multi_source_days(individual bigint) RETURNS void LANGUAGE sql AS $$
    SELECT data4help_recount_days(individual, r.sample_type, array_agg(r.day))
    FROM daily_rollups r
    WHERE r.individual_id = individual AND cardinality(r.source_ids) > 1
    GROUP BY r.sample_type;
$$;

-- The time-zone rebuild, now with each day's sources and the comparison on days with several.
CREATE OR REPLACE FUNCTION data4help_rebuild_rollups(individual bigint) RETURNS void LANGUAGE sql AS $$
    SELECT pg_advisory_xact_lock(hashtextextended('data4help.ingest', individual));
    DELETE FROM daily_rollups WHERE individual_id = individual;
    INSERT INTO daily_rollups (individual_id, sample_type, day, sample_count, value_sum, value_min, value_max, source_ids)
    SELECT b.individual_id, b.sample_type,
           ((b.block_start + u.offset_ms * interval '1 millisecond') AT TIME ZONE i.time_zone)::date,
           count(*), sum(u.val), min(u.val), max(u.val), array_agg(DISTINCT COALESCE(u.source_id, 0)::int2 ORDER BY COALESCE(u.source_id, 0)::int2)
    FROM sample_blocks b
    JOIN individuals i ON i.id = b.individual_id
    CROSS JOIN LATERAL unnest(b.offsets_ms, b.vals, b.source_ids) AS u(offset_ms, val, source_id)
    WHERE b.individual_id = individual
      AND b.sample_type IN (SELECT code FROM sample_types WHERE rolled_up)
    GROUP BY 1, 2, 3;
    SELECT data4help_recount_multi_source_days(individual);
$$;

-- Existing data: every individual's days with their sources, counted by the rule.
SELECT data4help_rebuild_rollups(id) FROM individuals WHERE EXISTS (SELECT 1 FROM sample_blocks b WHERE b.individual_id = individuals.id);
