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

-- As in migration 0043, plus the days that gained their first value or lost their last.
--
-- A batch of the backfill reads an individual's days under a lock on their `individuals` row
-- (FOR UPDATE), and a statement that takes a day away takes its individual's row FOR KEY SHARE
-- before it does: a day taken away while a batch reads is either seen gone by the batch or taken
-- away after it, never added back by it. Days added need no lock (adding is a union either way).
CREATE OR REPLACE FUNCTION data4help_roll_changes(removed daily_rollups[], added daily_rollups[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    lost activity_days[];
BEGIN
    WITH changed AS (
        SELECT r.individual_id, r.sample_type, r.day, r.sample_count, r.value_sum, -1 AS sign FROM unnest(removed) AS r
        UNION ALL
        SELECT a.individual_id, a.sample_type, a.day, a.sample_count, a.value_sum, 1 FROM unnest(added) AS a
    ),
    months AS (
        INSERT INTO monthly_rollups AS m (individual_id, sample_type, month, days, sample_count, value_sum)
        SELECT c.individual_id, c.sample_type, date_trunc('month', c.day)::date, sum(c.sign), sum(c.sign * c.sample_count), sum(c.sign * c.value_sum)
        FROM changed AS c
        GROUP BY 1, 2, 3
        ON CONFLICT (individual_id, sample_type, month) DO UPDATE SET
            days = m.days + EXCLUDED.days,
            sample_count = m.sample_count + EXCLUDED.sample_count,
            value_sum = m.value_sum + EXCLUDED.value_sum
    )
    INSERT INTO weekly_rollups AS w (individual_id, sample_type, week, days, sample_count, value_sum)
    SELECT c.individual_id, c.sample_type, date_trunc('week', c.day)::date, sum(c.sign), sum(c.sign * c.sample_count), sum(c.sign * c.value_sum)
    FROM changed AS c
    GROUP BY 1, 2, 3
    ON CONFLICT (individual_id, sample_type, week) DO UPDATE SET
        days = w.days + EXCLUDED.days,
        sample_count = w.sample_count + EXCLUDED.sample_count,
        value_sum = w.value_sum + EXCLUDED.value_sum;

    IF cardinality(removed) > 0 THEN
        lost := ARRAY(
            SELECT ROW(l.sample_type, l.individual_id, range_agg(daterange(l.day, l.day + 1)))::activity_days
            FROM (SELECT r.sample_type, r.individual_id, r.day FROM unnest(removed) AS r WHERE r.sample_count > 0
                  EXCEPT
                  SELECT a.sample_type, a.individual_id, a.day FROM unnest(added) AS a WHERE a.sample_count > 0) AS l
            GROUP BY l.sample_type, l.individual_id);
        IF cardinality(lost) > 0 THEN
            PERFORM 1 FROM individuals i WHERE i.id IN (SELECT l.individual_id FROM unnest(lost) AS l) ORDER BY i.id FOR KEY SHARE;
            UPDATE activity_days AS d SET days = d.days - l.days
            FROM unnest(lost) AS l
            WHERE d.sample_type = l.sample_type AND d.individual_id = l.individual_id;
        END IF;
    END IF;
    INSERT INTO activity_days AS d (sample_type, individual_id, days)
    SELECT g.sample_type, g.individual_id, range_agg(daterange(g.day, g.day + 1))
    FROM (SELECT a.sample_type, a.individual_id, a.day FROM unnest(added) AS a WHERE a.sample_count > 0
          EXCEPT
          SELECT r.sample_type, r.individual_id, r.day FROM unnest(removed) AS r WHERE r.sample_count > 0) AS g
    GROUP BY 1, 2
    ORDER BY 1, 2
    ON CONFLICT (sample_type, individual_id) DO UPDATE SET days = d.days + EXCLUDED.days;
END
$$;
