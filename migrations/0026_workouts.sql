-- Workouts as records: what the device summed for one activity (Apple Health's `Workout`, a FIT
-- session, a TCX activity's laps). Its route and heart rate are the individual's location fixes
-- and samples in its window, read from there, not copied. `client_id` comes from the workout's
-- identity (activity, source, start, end), so importing the same file twice stores it once.
CREATE TABLE workouts (
    id                  bigint           GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id           uuid             NOT NULL DEFAULT gen_random_uuid(),
    individual_id       bigint           NOT NULL REFERENCES individuals (id) ON DELETE CASCADE,
    client_id           text             NOT NULL,
    activity            text             NOT NULL,
    started_at          timestamptz      NOT NULL,
    ended_at            timestamptz      NOT NULL,
    distance_metres     double precision,
    energy_kilocalories double precision,
    average_heart_rate  double precision,
    maximum_heart_rate  double precision,
    source              text,
    import_id           bigint           REFERENCES imports (id) ON DELETE SET NULL,
    created_at          timestamptz      NOT NULL DEFAULT now(),
    CONSTRAINT workouts_public_id_key UNIQUE (public_id),
    CONSTRAINT workouts_client_id_key UNIQUE (individual_id, client_id),
    CONSTRAINT workouts_window_check CHECK (ended_at >= started_at AND ended_at - started_at <= interval '30 days'),
    CONSTRAINT workouts_activity_check CHECK (activity ~ '^[A-Za-z]{1,64}$'),
    CONSTRAINT workouts_figures_check CHECK (
        coalesce(distance_metres, 0) >= 0 AND coalesce(energy_kilocalories, 0) >= 0
        AND coalesce(average_heart_rate, 0) >= 0 AND coalesce(maximum_heart_rate, 0) >= 0)
);
-- The owner's listing, newest first (keyset on started_at, id).
CREATE INDEX workouts_individual_idx ON workouts (individual_id, started_at DESC, id DESC);
