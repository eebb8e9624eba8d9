-- Track4Run: run events on a course, their participants. Live positions follow.
CREATE TABLE run_events (
    id                 bigint           GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id          uuid             NOT NULL DEFAULT gen_random_uuid(),
    organiser_id       bigint           NOT NULL REFERENCES individuals (id) ON DELETE CASCADE,
    created_at         timestamptz      NOT NULL DEFAULT now(),
    updated_at         timestamptz      NOT NULL DEFAULT now(),
    name               text             NOT NULL,
    description        text             NOT NULL DEFAULT '',
    starts_at          timestamptz      NOT NULL,
    ends_at            timestamptz      NOT NULL,
    enrolment_deadline timestamptz      NOT NULL,
    max_participants   integer          NOT NULL,
    path               jsonb            NOT NULL,   -- GeoJSON LineString coordinates, [[lon, lat], ...]
    length_meters      double precision NOT NULL,
    cancelled_at       timestamptz,
    CONSTRAINT run_events_public_id_key UNIQUE (public_id),
    CONSTRAINT run_events_times_check CHECK (starts_at < ends_at AND enrolment_deadline <= starts_at),
    CONSTRAINT run_events_capacity_check CHECK (max_participants BETWEEN 1 AND 10000)
);
CREATE INDEX run_events_organiser_idx ON run_events (organiser_id, id);
-- The public listing by status (upcoming, live, finished) is a range on these.
CREATE INDEX run_events_starts_idx ON run_events (starts_at);
CREATE INDEX run_events_ends_idx ON run_events (ends_at);

-- Enrolment: one row per runner and event. The event row is locked while enrolling, so the
-- capacity check and the insert cannot race (two requests for the last place: one wins).
CREATE TABLE run_participants (
    run_id        bigint      NOT NULL REFERENCES run_events (id) ON DELETE CASCADE,
    individual_id bigint      NOT NULL REFERENCES individuals (id) ON DELETE CASCADE,
    runner_id     uuid        NOT NULL DEFAULT gen_random_uuid(),   -- what spectators see, never the account
    display_name  text        NOT NULL,
    enrolled_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, individual_id),
    CONSTRAINT run_participants_runner_key UNIQUE (runner_id)
);
CREATE INDEX run_participants_individual_idx ON run_participants (individual_id, run_id);
