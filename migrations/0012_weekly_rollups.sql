-- Weekly totals for aggregates grouped by week (ISO weeks, Monday first), kept like the monthly
-- ones: the same statement triggers on daily_rollups now roll both.
CREATE TABLE weekly_rollups (
    individual_id bigint           NOT NULL REFERENCES individuals (id) ON DELETE CASCADE,
    sample_type   smallint         NOT NULL,
    week          date             NOT NULL,   -- the Monday
    days          integer          NOT NULL,
    sample_count  bigint           NOT NULL,
    value_sum     double precision NOT NULL,
    PRIMARY KEY (individual_id, sample_type, week)
);
CREATE INDEX weekly_rollups_type_week_idx ON weekly_rollups (sample_type, week) INCLUDE (individual_id, days, sample_count, value_sum);

CREATE OR REPLACE FUNCTION data4help_roll_months(changed daily_rollups[], sign integer) RETURNS void LANGUAGE sql AS $$
    INSERT INTO monthly_rollups AS m (individual_id, sample_type, month, days, sample_count, value_sum)
    SELECT c.individual_id, c.sample_type, date_trunc('month', c.day)::date, sign * count(*), sign * sum(c.sample_count), sign * sum(c.value_sum)
    FROM unnest(changed) AS c
    GROUP BY 1, 2, 3
    ON CONFLICT (individual_id, sample_type, month) DO UPDATE SET
        days = m.days + EXCLUDED.days,
        sample_count = m.sample_count + EXCLUDED.sample_count,
        value_sum = m.value_sum + EXCLUDED.value_sum;
    INSERT INTO weekly_rollups AS w (individual_id, sample_type, week, days, sample_count, value_sum)
    SELECT c.individual_id, c.sample_type, date_trunc('week', c.day)::date, sign * count(*), sign * sum(c.sample_count), sign * sum(c.value_sum)
    FROM unnest(changed) AS c
    GROUP BY 1, 2, 3
    ON CONFLICT (individual_id, sample_type, week) DO UPDATE SET
        days = w.days + EXCLUDED.days,
        sample_count = w.sample_count + EXCLUDED.sample_count,
        value_sum = w.value_sum + EXCLUDED.value_sum;
$$;

INSERT INTO weekly_rollups (individual_id, sample_type, week, days, sample_count, value_sum)
SELECT individual_id, sample_type, date_trunc('week', day)::date, count(*), sum(sample_count), sum(value_sum)
FROM daily_rollups GROUP BY 1, 2, 3;
