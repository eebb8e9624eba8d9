-- Values the server derives from what people upload (issue 25), kept so that a year of them
-- reads in milliseconds, and rolled up per day like uploaded types so that third parties can
-- aggregate over them (differentially private, as for every other type):
--   13 restingHeartRate — a night's lowest sustained 5-minute mean heart rate (bpm);
--   14 workoutSummary   — the day's workouts: how many and their minutes.
-- Neither is ever uploaded: `rolled_up` is false, so the ingest statement never writes them.
INSERT INTO sample_types (code, name, rolled_up) VALUES (13, 'restingHeartRate', false), (14, 'workoutSummary', false);

-- One row per night that was computed (local day of the person), with or without a value, and
-- the fingerprint of what it was computed from: the night's intervals (midnight to six and the
-- sleep that began between 18:00 the day before and noon), the row versions of the heart-rate
-- rollups of the day and the day before (any new reading changes them), the algorithm's version.
-- A read whose fingerprint differs computes the night again.
CREATE TABLE resting_heart_rates (
    individual_id bigint      NOT NULL REFERENCES individuals (id) ON DELETE CASCADE,
    day           date        NOT NULL,
    fingerprint   text        NOT NULL,
    bpm           real,
    window_start  timestamptz,
    computed_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (individual_id, day),
    CONSTRAINT resting_heart_rates_value_check CHECK ((bpm IS NULL) = (window_start IS NULL) AND coalesce(bpm, 50) BETWEEN 20 AND 250)
);

-- The sweep's look for new workouts without an analysis.
CREATE INDEX workouts_created_idx ON workouts (created_at);

-- Each night's value as the daily rollup of type 13 (one reading a day: count 1).
CREATE FUNCTION data4help_resting_heart_rate_rolled() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        DELETE FROM daily_rollups WHERE individual_id = OLD.individual_id AND sample_type = 13 AND day = OLD.day;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.bpm IS NOT NULL THEN
        INSERT INTO daily_rollups (individual_id, sample_type, day, sample_count, value_sum, value_min, value_max)
        VALUES (NEW.individual_id, 13, NEW.day, 1, NEW.bpm, NEW.bpm, NEW.bpm);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER resting_heart_rates_rolled AFTER INSERT OR UPDATE OR DELETE ON resting_heart_rates
    FOR EACH ROW EXECUTE FUNCTION data4help_resting_heart_rate_rolled();

-- A day's workouts as the daily rollup of type 14: their number, and the sum, least and most of
-- their minutes; the day is the local day (the person's time zone) each started on.
CREATE FUNCTION data4help_roll_workout_day(individual bigint, started timestamptz) RETURNS void LANGUAGE sql AS $$
    WITH zone AS (SELECT time_zone FROM individuals WHERE id = individual),
    day AS (SELECT (started AT TIME ZONE zone.time_zone)::date AS d, zone.time_zone FROM zone)
    DELETE FROM daily_rollups r USING day WHERE r.individual_id = individual AND r.sample_type = 14 AND r.day = day.d;
    INSERT INTO daily_rollups (individual_id, sample_type, day, sample_count, value_sum, value_min, value_max)
    SELECT individual, 14, d.day, count(*), sum(m.minutes), min(m.minutes), max(m.minutes)
    FROM (SELECT (started AT TIME ZONE i.time_zone)::date AS day, i.time_zone FROM individuals i WHERE i.id = individual) d
    JOIN workouts w ON w.individual_id = individual AND (w.started_at AT TIME ZONE d.time_zone)::date = d.day
    CROSS JOIN LATERAL (SELECT extract(epoch FROM w.ended_at - w.started_at) / 60 AS minutes) m
    GROUP BY d.day;
$$;
CREATE FUNCTION data4help_workouts_rolled() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM data4help_roll_workout_day(OLD.individual_id, OLD.started_at);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM data4help_roll_workout_day(NEW.individual_id, NEW.started_at);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER workouts_rolled AFTER INSERT OR UPDATE OF started_at, ended_at OR DELETE ON workouts
    FOR EACH ROW EXECUTE FUNCTION data4help_workouts_rolled();

-- A new time zone moves every day: the rebuild (0029) now also counts the workouts again and
-- forgets every kept night (their nights moved; the next read or sweep computes them again).
CREATE OR REPLACE FUNCTION data4help_rebuild_rollups(individual bigint) RETURNS void LANGUAGE sql AS $$
    SELECT pg_advisory_xact_lock(hashtextextended('data4help.ingest', individual));
    DELETE FROM resting_heart_rates WHERE individual_id = individual;
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
    INSERT INTO daily_rollups (individual_id, sample_type, day, sample_count, value_sum, value_min, value_max)
    SELECT individual, 14, (w.started_at AT TIME ZONE i.time_zone)::date, count(*),
           sum(extract(epoch FROM w.ended_at - w.started_at) / 60), min(extract(epoch FROM w.ended_at - w.started_at) / 60),
           max(extract(epoch FROM w.ended_at - w.started_at) / 60)
    FROM workouts w JOIN individuals i ON i.id = w.individual_id
    WHERE w.individual_id = individual
    GROUP BY 1, 2, 3;
$$;

-- Existing workouts.
INSERT INTO daily_rollups (individual_id, sample_type, day, sample_count, value_sum, value_min, value_max)
SELECT w.individual_id, 14, (w.started_at AT TIME ZONE i.time_zone)::date, count(*),
       sum(extract(epoch FROM w.ended_at - w.started_at) / 60), min(extract(epoch FROM w.ended_at - w.started_at) / 60),
       max(extract(epoch FROM w.ended_at - w.started_at) / 60)
FROM workouts w JOIN individuals i ON i.id = w.individual_id
GROUP BY 1, 2, 3;
