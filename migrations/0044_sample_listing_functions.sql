-- A page of one individual's samples (GET /api/users/data, a third party's granted reads), as a
-- PL/pgSQL function with a statement per order. HealthDataReader.samples explains the window: the
-- blocks up to the page_size-th beyond the position (`boundary`) surely hold the page; the window
-- starts at the hour block that may hold the first qualifying sample; the partitions are those
-- between low_hour and high_minute.
--
-- Until now the server sent this as a prepared statement. Measured 2026-11-27 on a scratch
-- database (one person with 40,000 minute blocks, one with 100; a page of 11, newest first;
-- pgbench, one client):
-- * Its bounds came from a CTE, so in the generic plan they were join filters, not index
--   conditions: both scans read every block the person had in the month — 38,000 rows and 31 ms
--   for one page (45–68 pages/s). As variables (parameters of the statements below) they bound
--   the index scans: the boundary scan walks the index backwards and stops at the 12th block
--   (0.7 ms; 3,200–4,000 pages/s).
-- * With the scans bounded, PostgreSQL's choice between a custom and a generic plan turned on the
--   statistics: for the person with a hundred blocks the custom estimate was lower, so every
--   execution was planned again (510–730 pages/s). The SET clause fixes the choice for the
--   function's statements whatever the statistics (partitions are pruned when the executor
--   starts), and PL/pgSQL keeps the plan for the session: 3,200 pages/s for either person.

-- Newest first: samples in [lower_ms, upper_ms) strictly before the cursor (start, type, key);
-- oldest first: strictly after it.
CREATE FUNCTION data4help_samples_page(
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
            SELECT b.sample_type, (extract(epoch FROM b.block_start) * 1000)::int8 + u.offset_ms AS start_ms,
                   u.val, u.duration_ms, u.key, u.source_id
            FROM sample_blocks AS b
            CROSS JOIN LATERAL unnest(b.offsets_ms, b.vals, b.durations_ms, b.keys, b.source_ids)
                AS u(offset_ms, val, duration_ms, key, source_id)
            WHERE b.individual_id = person AND b.sample_type = ANY (types)
              AND b.block_start >= low_hour AND b.block_start <= high_minute
              AND b.block_start >= GREATEST(low_hour, COALESCE((SELECT block_start FROM boundary), '-infinity'))
              AND b.block_start <= high_minute
        )
        SELECT c.sample_type, c.start_ms, c.val, c.duration_ms, c.key, s.name FROM candidates AS c
        LEFT JOIN sample_sources AS s ON s.individual_id = person AND s.source_id = c.source_id
        WHERE c.start_ms >= lower_ms AND c.start_ms < upper_ms
          AND (c.start_ms, c.sample_type, c.key) < (cursor_start_ms, cursor_type, cursor_key)
        ORDER BY c.start_ms DESC, c.sample_type DESC, c.key DESC
        LIMIT page_size;
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
            SELECT b.sample_type, (extract(epoch FROM b.block_start) * 1000)::int8 + u.offset_ms AS start_ms,
                   u.val, u.duration_ms, u.key, u.source_id
            FROM sample_blocks AS b
            CROSS JOIN LATERAL unnest(b.offsets_ms, b.vals, b.durations_ms, b.keys, b.source_ids)
                AS u(offset_ms, val, duration_ms, key, source_id)
            WHERE b.individual_id = person AND b.sample_type = ANY (types)
              AND b.block_start >= low_hour AND b.block_start <= high_minute
              AND b.block_start <= LEAST(high_minute, COALESCE((SELECT block_start FROM boundary), 'infinity'))
        )
        SELECT c.sample_type, c.start_ms, c.val, c.duration_ms, c.key, s.name FROM candidates AS c
        LEFT JOIN sample_sources AS s ON s.individual_id = person AND s.source_id = c.source_id
        WHERE c.start_ms >= lower_ms AND c.start_ms < upper_ms
          AND (c.start_ms, c.sample_type, c.key) > (cursor_start_ms, cursor_type, cursor_key)
        ORDER BY c.start_ms ASC, c.sample_type ASC, c.key ASC
        LIMIT page_size;
    END IF;
END
$$;
