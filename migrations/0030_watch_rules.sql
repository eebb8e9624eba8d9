-- Watch rules and their alerts: the SOS Manager's Anomaly Detection beyond emergencies.
--
-- A rule watches one type of the individual's readings for a condition (below, above or outside
-- bounds) that persists (N consecutive readings, sustained for a duration, or an aggregate over
-- a trailing window). It is evaluated inside the ingest transaction of every upload that stores
-- new readings of its type (ingests of one individual are serialised, on every instance, so
-- evaluation and the throttle need no other lock). One episode raises one alert: a condition
-- that stays true extends its alert. A new alert waits out the rule's throttle.
CREATE TABLE watch_rules (
    id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id        uuid        NOT NULL DEFAULT gen_random_uuid(),
    individual_id    bigint      NOT NULL REFERENCES individuals (id) ON DELETE CASCADE,
    name             text        NOT NULL,
    template         text,                    -- the template it was adopted from, if any
    sample_type      smallint    NOT NULL,    -- SampleType.storageCode
    comparison       text        NOT NULL,    -- below | above | outside
    low_value        real,                    -- below: the bound; outside: the lower bound
    high_value       real,                    -- above: the bound; outside: the upper bound
    persistence      text        NOT NULL,    -- consecutive | sustained | average | median | min | max
    readings         smallint,                -- consecutive: N
    duration_ms      bigint,                  -- sustained: the duration; aggregates: the trailing window
    active_from      smallint,                -- minutes after local midnight; with active_to, or both NULL
    active_to        smallint,                -- exclusive; below active_from: across midnight
    severity         text        NOT NULL,    -- info | warning | urgent
    notify_device    boolean     NOT NULL,
    throttle_seconds integer     NOT NULL,
    enabled          boolean     NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT watch_rules_public_id_key UNIQUE (public_id),
    CONSTRAINT watch_rules_comparison_check CHECK (
        (comparison = 'below' AND low_value IS NOT NULL AND high_value IS NULL)
        OR (comparison = 'above' AND high_value IS NOT NULL AND low_value IS NULL)
        OR (comparison = 'outside' AND low_value IS NOT NULL AND high_value IS NOT NULL AND low_value < high_value)),
    CONSTRAINT watch_rules_persistence_check CHECK (
        (persistence = 'consecutive' AND readings BETWEEN 1 AND 100 AND duration_ms IS NULL)
        OR (persistence IN ('sustained', 'average', 'median', 'min', 'max') AND readings IS NULL
            AND duration_ms BETWEEN 60000 AND 86400000)),
    CONSTRAINT watch_rules_hours_check CHECK (
        (active_from IS NULL AND active_to IS NULL)
        OR (active_from BETWEEN 0 AND 1439 AND active_to BETWEEN 0 AND 1439 AND active_from <> active_to)),
    CONSTRAINT watch_rules_severity_check CHECK (severity IN ('info', 'warning', 'urgent')),
    CONSTRAINT watch_rules_throttle_check CHECK (throttle_seconds BETWEEN 0 AND 604800)
);
-- The rules an upload evaluates, and the individual's listing.
CREATE INDEX watch_rules_individual_idx ON watch_rules (individual_id, sample_type) WHERE enabled;
CREATE INDEX watch_rules_listing_idx ON watch_rules (individual_id, id);

CREATE TABLE watch_alerts (
    id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id        uuid        NOT NULL DEFAULT gen_random_uuid(),
    individual_id    bigint      NOT NULL REFERENCES individuals (id) ON DELETE CASCADE,
    rule_id          bigint      REFERENCES watch_rules (id) ON DELETE SET NULL,   -- kept when the rule is deleted
    rule_name        text        NOT NULL,
    sample_type      smallint    NOT NULL,
    severity         text        NOT NULL,
    condition        text        NOT NULL,    -- the rule's condition in words, as it was when raised
    episode_first_ms bigint      NOT NULL,    -- the readings the episode covers: it grows while the
    episode_last_ms  bigint      NOT NULL,    -- condition holds, so one episode raises one alert
    readings         jsonb       NOT NULL,    -- [{ "timeMs", "value" }] the latest readings of the episode, at most 100
    received_at      timestamptz NOT NULL,    -- when the upload that raised it reached the server
    raised_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    acknowledged_at  timestamptz,
    CONSTRAINT watch_alerts_public_id_key UNIQUE (public_id),
    CONSTRAINT watch_alerts_severity_check CHECK (severity IN ('info', 'warning', 'urgent'))
);
-- An individual's alerts, newest first; a rule's latest alerts (extension and throttle).
CREATE INDEX watch_alerts_individual_idx ON watch_alerts (individual_id, id);
CREATE INDEX watch_alerts_rule_idx ON watch_alerts (rule_id, id);
