-- The data types' permanent storage codes (HealthSharing's SampleType.storageCode), and which of
-- them get daily rollups: quantities do; sleep, a category of stages, does not. A test keeps this
-- table and the Swift catalogue in step.
CREATE TABLE sample_types (
    code      smallint PRIMARY KEY,
    name      text     NOT NULL UNIQUE,
    rolled_up boolean  NOT NULL
);
INSERT INTO sample_types (code, name, rolled_up) VALUES
    (1, 'heartRate', true), (2, 'stepCount', true), (3, 'distance', true),
    (4, 'bloodPressureSystolic', true), (5, 'bloodPressureDiastolic', true), (6, 'oxygenSaturation', true),
    (7, 'bodyTemperature', true), (8, 'bloodGlucose', true), (9, 'respiratoryRate', true),
    (10, 'bodyMass', true), (11, 'activeEnergy', true), (12, 'sleep', false);

-- Recomputes an individual's daily rollups from their samples, in their current time zone.
-- Run when the time zone changes, inside the transaction that changes it, holding the
-- individual's ingest lock so that no upload adds to the rollups half-way.
CREATE FUNCTION data4help_rebuild_rollups(individual bigint) RETURNS void LANGUAGE sql AS $$
    SELECT pg_advisory_xact_lock(hashtextextended('data4help.ingest', individual));
    DELETE FROM daily_rollups WHERE individual_id = individual;
    INSERT INTO daily_rollups (individual_id, sample_type, day, sample_count, value_sum, value_min, value_max)
    SELECT b.individual_id, b.sample_type,
           ((b.block_start + u.offset_ms * interval '1 millisecond') AT TIME ZONE i.time_zone)::date,
           count(*), sum(u.val), min(u.val), max(u.val)
    FROM sample_blocks b
    JOIN individuals i ON i.id = b.individual_id
    CROSS JOIN LATERAL unnest(b.offsets_ms, b.vals) AS u(offset_ms, val)
    WHERE b.individual_id = individual
      AND b.sample_type IN (SELECT code FROM sample_types WHERE rolled_up)
    GROUP BY 1, 2, 3;
$$;
