-- Settled hour blocks without 64-bit keys (issue 27: 8 bytes a sample).
--
-- A minute block keeps, for each sample, a 64-bit key: the hash of the client's id for it (or of
-- its start and value), by which a sample sent again is known as a duplicate and an event refers
-- to the samples it announces. Random, those 8 bytes are the largest part of a settled sample:
-- at 1 Hz an hour block's offsets take 4.0 bytes a sample, its values 0.9 (TOAST compresses a
-- heart rate's small steps), its keys 8.0 (`bench storage`, 2026-11-27: 13.9 in all).
--
-- An hour block (block_minutes 60: settled history, migration 0032) now stores in their place
-- `tags`: 16 bits of the key (its four 16-bit quarters XOR-ed: data4help_key_tag; the top bits
-- alone would not do, as FNV-1a, DedupeKey's hash, mixes the last bytes of an id into the low bits
-- only: "x0" and "x1" share their top 16). Within such a block a sample is identified by its
-- offset and its tag; two samples that agree in both are the same sample, as two with one key
-- are in a minute block (the same client id sent again for the same instant, whatever its value;
-- without an id, the same instant and value, whatever the source). What is given up: two samples
-- of one type and millisecond with different keys are told apart only by 16 bits, so one such
-- pair in 65,536 is taken for one sample in an hour block (sent to a minute block, recent data,
-- they are told apart by 64 as before, but list in either order, and a listing page that ends
-- between them leaves the second out).
--
-- The key readers see for a sample, in either kind of block, is that identity packed into 64 bits
-- (data4help_settled_key: the offset in its hour in the high half, the tag below), by which
-- listing pages order an instant's samples of a type; an event names a sample by the same with
-- 16 bits of its hour added (data4help_event_key). Neither changes when the compactor moves a
-- minute block's samples into an hour block.
--
-- Either `keys` or `tags` is set: keys in every minute block and in an hour block written before
-- this migration, or one whose samples the rule above would merge (the compactor keeps its keys);
-- tags in the others. The compactor (SampleCompactor) moves existing hour blocks to tags online,
-- one individual and a day of hours per transaction, from its next pass on, which goes over all
-- history once (compacted_before is reset here, and a pass in progress starts again). Events
-- written before this migration name their samples by client key: the reader of an event's
-- samples matches those of a block without keys to them by tag (so a sample of the event's types
-- and span that the event did not announce, with the tag of one it did, is read with it: one in
-- 65,536 for an event of one sample, more for larger ones). (An
-- instance of the previous release still compacting while this runs may end its pass and set
-- compacted_before again: deploy with COMPACTION_INTERVAL_SECONDS of the old instances long, or
-- reset the row once they are gone.)
ALTER TABLE sample_blocks ALTER COLUMN keys DROP NOT NULL;
ALTER TABLE sample_blocks ADD COLUMN tags smallint[];

-- A key's tag: its four 16-bit quarters XOR-ed, less 32,768 (a smallint). Inlined by the planner.
CREATE FUNCTION data4help_key_tag(key int8) RETURNS int2
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (((key # (key >> 16) # (key >> 32) # (key >> 48)) & 65535) - 32768)::int2
$$;

-- The key of a sample: the offset in its hour (below 3,600,000 ms, 22 bits) in the high 32 bits,
-- the tag plus 32,768 (0–65,535) below. Inlined by the planner.
CREATE FUNCTION data4help_settled_key(offset_ms int4, tag int2) RETURNS int8
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (offset_ms::int8 << 32) | (tag::int8 + 32768)
$$;

-- The milliseconds since the start of the UTC hour of an instant (epoch milliseconds, before 1970
-- too).
CREATE FUNCTION data4help_hour_offset(start_ms int8) RETURNS int4
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ((start_ms % 3600000 + 3600000) % 3600000)::int4
$$;

-- The key by which an event names a sample (epoch milliseconds and tag): its settled key with the
-- low 16 bits of its hour's number in bits 16–31, so that samples at the same offset of other
-- hours in the event's span are not taken for it.
CREATE FUNCTION data4help_event_key(start_ms int8, tag int2) RETURNS int8
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT data4help_settled_key(data4help_hour_offset(start_ms), tag)
           | ((((start_ms - data4help_hour_offset(start_ms)) / 3600000) & 65535) << 16)
$$;

UPDATE sample_compaction SET compacted_before = '-infinity', pass_before = NULL, pass_after = 0;

-- Events before this one named their samples by client key (PartyEventStore's reader matches a
-- sample of a block without keys to them by tag); from here on by settled key.
ALTER TABLE sample_compaction ADD COLUMN client_keyed_events_before bigint NOT NULL DEFAULT 0;
UPDATE sample_compaction SET client_keyed_events_before = (SELECT COALESCE(max(id), 0) + 1 FROM party_events);

-- The listing functions of migration 0044, ordering an instant's samples by their settled keys.
-- A page over 1 Hz hour blocks (two blocks, 7,200 candidates, scratch cluster, five runs each):
-- 8.2–9.1 ms ordered by stored keys, 9.1–10.7 with each candidate's key computed, 6.5–7.1 cut by tag
-- and the key computed for the page's rows only (tags are 7 KB a block to read where keys were 29).
-- Newest first: samples in [lower_ms, upper_ms) strictly before the cursor (start, type, key);
-- oldest first: strictly after it.
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
            SELECT b.sample_type, (extract(epoch FROM b.block_start) * 1000)::int8 + u.offset_ms AS start_ms,
                   u.val, u.duration_ms, COALESCE(u.tag, data4help_key_tag(u.key)) AS tag, u.source_id
            FROM sample_blocks AS b
            CROSS JOIN LATERAL unnest(b.offsets_ms, b.vals, b.durations_ms, b.keys, b.source_ids, b.tags)
                AS u(offset_ms, val, duration_ms, key, source_id, tag)
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
            SELECT b.sample_type, (extract(epoch FROM b.block_start) * 1000)::int8 + u.offset_ms AS start_ms,
                   u.val, u.duration_ms, COALESCE(u.tag, data4help_key_tag(u.key)) AS tag, u.source_id
            FROM sample_blocks AS b
            CROSS JOIN LATERAL unnest(b.offsets_ms, b.vals, b.durations_ms, b.keys, b.source_ids, b.tags)
                AS u(offset_ms, val, duration_ms, key, source_id, tag)
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
