-- Settled history in hour blocks.
--
-- A minute block suits data as it arrives: a watch's 1 Hz heart rate fills it with 60 samples,
-- and an upload rewrites one small block. Imported history is sparse — an Apple Watch measures
-- heart rate every few minutes outside workouts — so a minute block holds one sample and costs a
-- row, two index entries and a rollup update for it: 124 bytes a sample and 8,000 samples/s
-- stored (bench import, 2026-11-25). History therefore goes into blocks of a whole UTC hour.
--
-- The rule that keeps every reader right:
--   * a block covers [block_start, block_start + block_minutes): 1 (a minute) or 60 (an hour,
--     starting on a UTC hour);
--   * within one individual, type and UTC hour there is either one hour block or only minute
--     blocks, never both — so a sample has exactly one block it belongs in, and blocks never
--     overlap;
--   * an import (history) writes a whole hour block for an hour that is settled (it began more
--     than 49 hours before the import's batch) and holds no block yet; otherwise, and for every
--     upload, a sample goes into the hour block of its hour if there is one, else its minute
--     block. Uploads never start an hour block, so recent data (what AutomatedSOS and the live
--     streams read) stays in minute blocks, cheap to amend.
-- Readers of a time range start at the hour block that may hold its first samples: the range
-- from the hour before, minute blocks only from the range's own minute.
ALTER TABLE sample_blocks ADD COLUMN block_minutes smallint NOT NULL DEFAULT 1;
ALTER TABLE sample_blocks ADD CONSTRAINT sample_blocks_minutes_check CHECK (
    block_minutes = 1
    OR (block_minutes = 60 AND extract(epoch FROM block_start - 'epoch'::timestamptz) % 3600 = 0)
);

-- The two functions of migration 0029 that read blocks from a time on, reading from the hour
-- block that may hold it.
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
               b.block_start + u.offset_ms * interval '1 millisecond' AS start,
               u.val, COALESCE(u.duration_ms, 0) AS duration_ms, COALESCE(u.source_id, 0)::int2 AS source_id,
               COALESCE(s.priority, 32767)::int4 * 65536 + COALESCE(u.source_id, 0) AS rank,
               d.time_zone
        FROM days d
        JOIN sample_blocks b ON b.individual_id = individual AND b.sample_type = kind
                            AND b.block_start > d.first_start - interval '1 hour' AND b.block_start < d.last_end
                            AND (b.block_start >= d.first_start OR b.block_minutes = 60)
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
                SELECT b.block_start + u.offset_ms * interval '1 millisecond' AS start, u.val, COALESCE(u.source_id, 0)::int2 AS source_id
                FROM sample_blocks b
                CROSS JOIN LATERAL unnest(b.offsets_ms, b.vals, b.source_ids) AS u(offset_ms, val, source_id)
                WHERE b.individual_id = individual AND b.sample_type = kind
                  AND b.block_start > lo - interval '1 hour' AND b.block_start < hi
                  AND (b.block_start >= date_trunc('minute', lo) OR b.block_minutes = 60)
            ) x
            WHERE x.start >= lo AND x.start < hi;
    END IF;
END
$$;
