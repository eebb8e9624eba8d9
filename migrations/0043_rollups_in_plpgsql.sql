-- Monthly and weekly rollups follow daily_rollups through PL/pgSQL, one pass per statement.
--
-- data4help_roll_months (0010, 0012) was a LANGUAGE sql function that the planner cannot inline
-- (it writes): PostgreSQL parsed and planned its two statements on every call, and every upload
-- called it twice (the day's old row taken away, its new row added). perf of `bench webhooks`
-- (2026-11-27, the whole machine): fmgr_sql 12.5 % of all CPU, most of it parsing and planning
-- these statements. PL/pgSQL keeps a statement's plan for the session, and an update now rolls
-- the net change — the new rows minus the old ones — in one pass.
CREATE FUNCTION data4help_roll_changes(removed daily_rollups[], added daily_rollups[]) RETURNS void LANGUAGE plpgsql AS $$
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
END
$$;

CREATE OR REPLACE FUNCTION data4help_daily_rollups_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM data4help_roll_changes('{}', ARRAY(SELECT n::daily_rollups FROM new_rows n));
    RETURN NULL;
END
$$;
CREATE OR REPLACE FUNCTION data4help_daily_rollups_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM data4help_roll_changes(ARRAY(SELECT o::daily_rollups FROM old_rows o), ARRAY(SELECT n::daily_rollups FROM new_rows n));
    RETURN NULL;
END
$$;
-- An erased individual's monthly and weekly rows go with the account (ON DELETE CASCADE).
CREATE OR REPLACE FUNCTION data4help_daily_rollups_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM data4help_roll_changes(ARRAY(SELECT o::daily_rollups FROM old_rows o
                                         WHERE EXISTS (SELECT 1 FROM individuals i WHERE i.id = o.individual_id)), '{}');
    RETURN NULL;
END
$$;

DROP FUNCTION data4help_roll_months(daily_rollups[], integer);
