-- Workout and heart-rate insights (issue 25): the person's measured maximum heart rate, and
-- each workout's analysis, computed once and kept.

-- Measured by the person (a lab test, a field test); analyses use 220 − age without it.
ALTER TABLE individuals ADD COLUMN maximum_heart_rate real
    CONSTRAINT individuals_maximum_heart_rate_check CHECK (maximum_heart_rate BETWEEN 100 AND 250);

-- A workout's analysis (JSON: totals, zones, dynamic profiles), with the fingerprint of what it
-- was computed from — the heart-rate readings in the workout's window (count, keys, values), the
-- maximum heart rate and the analysis version. A read whose fingerprint differs (a late upload,
-- a new maximum) recomputes and replaces it.
CREATE TABLE workout_analyses (
    workout_id    bigint      PRIMARY KEY REFERENCES workouts (id) ON DELETE CASCADE,
    individual_id bigint      NOT NULL REFERENCES individuals (id) ON DELETE CASCADE,
    fingerprint   text        NOT NULL,
    computed_at   timestamptz NOT NULL DEFAULT now(),
    analysis      jsonb       NOT NULL
);
