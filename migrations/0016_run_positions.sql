-- Track4Run live data: every accepted position of every runner (for replay), and each runner's
-- live state on their enrolment row (locked while a batch of positions is applied, so a runner's
-- posts to different instances are applied one after the other).
CREATE TABLE run_positions (
    run_id          bigint           NOT NULL REFERENCES run_events (id) ON DELETE CASCADE,
    individual_id   bigint           NOT NULL REFERENCES individuals (id) ON DELETE CASCADE,
    recorded_at     timestamptz      NOT NULL,
    latitude        double precision NOT NULL,
    longitude       double precision NOT NULL,
    accuracy        real,
    distance_meters double precision NOT NULL,   -- along the course, as projected when stored
    offset_meters   real             NOT NULL,   -- from the course
    PRIMARY KEY (run_id, individual_id, recorded_at)
);
-- Replay of a whole event in time order.
CREATE INDEX run_positions_time_idx ON run_positions (run_id, recorded_at);

ALTER TABLE run_participants
    ADD COLUMN last_fix_at      timestamptz,
    ADD COLUMN latitude         double precision,
    ADD COLUMN longitude        double precision,
    ADD COLUMN distance_meters  double precision NOT NULL DEFAULT 0,
    ADD COLUMN first_fix_at     timestamptz,
    ADD COLUMN off_course       boolean          NOT NULL DEFAULT false,
    ADD COLUMN finished_at      timestamptz,
    ADD COLUMN dropped_fixes    integer          NOT NULL DEFAULT 0;
