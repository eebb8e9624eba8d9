-- Who has values on which days, one row per individual and type (issue 27): the population of a
-- time grouping's answer.
--
-- An answer's privacy record lists the individuals of its released groups (AggregateQueryStore).
-- The grouped statement collected each group's members (data4help_collect_ids, migration 0047),
-- an array append per value: a time grouping over 10,000 people appends half a million ids,
-- which in `psql` (2026-12-07, by day over 50 days, the answer sent in binary to /dev/null,
-- medians of seven interleaved runs) was 118 ms with the members against 61 ms without. Here a
-- person's days with values are one `datemultirange` (one range for someone who wears their
-- watch every day), so the population of the released days or weeks is one read of 10,000 rows:
-- 5.7 ms. GroupAggregateStore still collects the members of person groupings (one value a
-- person), and of time groupings until the backfill below has gone over everyone.
--
-- A day is in `days` while its daily rollup counts a value (sample_count > 0), kept by the
-- statement triggers that already roll the monthly and weekly totals (data4help_roll_changes,
-- migration 0043): a day joins when it gains its first value and leaves when it loses its last, so
-- an upload that adds to a day already counted changes nothing here. An erased individual's rows
-- go with the account (ON DELETE CASCADE).
CREATE TABLE activity_days (
    sample_type   smallint       NOT NULL,
    individual_id bigint         NOT NULL REFERENCES individuals (id) ON DELETE CASCADE,
    days          datemultirange NOT NULL,
    PRIMARY KEY (sample_type, individual_id)
);

-- The days rolled before this migration are added online by ActivityBackfill, a batch of
-- individuals per transaction in id order; `next_individual` is where the next batch starts, so a
-- backfill cut short resumes there. Until `done`, time groupings collect their members as before.
-- A database without rollups (a new one) has nothing to add.
CREATE TABLE activity_backfill (
    only_row        boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    next_individual bigint  NOT NULL DEFAULT 0,
    done            boolean NOT NULL
);
INSERT INTO activity_backfill (done) SELECT NOT EXISTS (SELECT 1 FROM daily_rollups);

-- The days each (type, individual) has with values in `these` rows and not in `other` (rows of one
-- statement: its old and new ones), as activity_days rows.
CREATE FUNCTION data4help_days_only_in(these daily_rollups[], other daily_rollups[]) RETURNS activity_days[] LANGUAGE plpgsql AS $$
BEGIN
    RETURN ARRAY(
        SELECT ROW(d.sample_type, d.individual_id, range_agg(daterange(d.day, d.day + 1)))::activity_days
        FROM (SELECT t.sample_type, t.individual_id, t.day FROM unnest(these) AS t WHERE t.sample_count > 0
              EXCEPT
              SELECT o.sample_type, o.individual_id, o.day FROM unnest(other) AS o WHERE o.sample_count > 0) AS d
        GROUP BY d.sample_type, d.individual_id
        ORDER BY d.sample_type, d.individual_id);
END
$$;

-- The rollup triggers' function (migration 0043) rolls the monthly and weekly totals as before,
-- under a new name, and then the days that gained their first value or lost their last.
--
-- A batch of the backfill reads an individual's days under a lock on their `individuals` row
-- (FOR UPDATE), and a statement that takes a day away takes its individual's row FOR KEY SHARE
-- before it does: a day taken away while a batch reads is either seen gone by the batch or taken
-- away after it, never added back by it. Days added need no lock (adding is a union either way).
ALTER FUNCTION data4help_roll_changes(daily_rollups[], daily_rollups[]) RENAME TO data4help_roll_totals;
CREATE FUNCTION data4help_roll_changes(removed daily_rollups[], added daily_rollups[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    lost activity_days[];
BEGIN
    PERFORM data4help_roll_totals(removed, added);
    IF cardinality(removed) > 0 THEN
        lost := data4help_days_only_in(removed, added);
        IF cardinality(lost) > 0 THEN
            PERFORM 1 FROM individuals i WHERE i.id IN (SELECT l.individual_id FROM unnest(lost) AS l) ORDER BY i.id FOR KEY SHARE;
            UPDATE activity_days AS d SET days = d.days - l.days
            FROM unnest(lost) AS l
            WHERE d.sample_type = l.sample_type AND d.individual_id = l.individual_id;
        END IF;
    END IF;
    INSERT INTO activity_days AS d (sample_type, individual_id, days)
    SELECT g.sample_type, g.individual_id, g.days FROM unnest(data4help_days_only_in(added, removed)) AS g
    ON CONFLICT (sample_type, individual_id) DO UPDATE SET days = d.days + EXCLUDED.days;
END
$$;
