-- AutomatedSOS incidents: one row per emergency, from detection to resolution.
--
-- An incident is opened inside the ingest transaction that stored its N-th consecutive abnormal
-- reading (so detection is exactly as durable as the reading), and it is its own dispatch outbox:
-- dispatchers on every instance claim due rows with FOR UPDATE SKIP LOCKED and a lease
-- (next_attempt_at), so a dispatch survives the death of the instance that detected it.
CREATE TABLE sos_incidents (
    id                  bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id           uuid        NOT NULL DEFAULT gen_random_uuid(),   -- also the dispatch's idempotency key
    individual_id       bigint      NOT NULL REFERENCES individuals (id) ON DELETE CASCADE,
    status              text        NOT NULL DEFAULT 'detected',
    sample_type         smallint    NOT NULL,             -- the monitored type whose readings triggered it
    readings            jsonb       NOT NULL,             -- [{ "timeMs", "value" }] the abnormal run, oldest first
    run_first_ms        bigint      NOT NULL,             -- the run of abnormal readings this incident covers:
    run_last_ms         bigint      NOT NULL,             -- it grows while the run continues, so one run opens one incident
    received_at         timestamptz NOT NULL,             -- when the triggering upload reached the server
    detected_at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    dispatch_due_at     timestamptz NOT NULL,             -- detected_at + the cancel window
    cancelled_at        timestamptz,                      -- "It's not an emergency", whenever it came
    dispatched_at       timestamptz,                      -- the dispatch centre accepted the call
    acknowledged_at     timestamptz,
    resolved_at         timestamptz,
    dispatch_reference  text,                             -- the dispatch centre's own case number
    latitude            double precision,                 -- the newest location fix at detection, if any
    longitude           double precision,
    accuracy            real,
    located_at          timestamptz,
    location_stale      boolean     NOT NULL,             -- no fix within the last 15 minutes
    home_area           text        NOT NULL,
    dispatch_attempts   integer     NOT NULL DEFAULT 0,
    next_attempt_at     timestamptz NOT NULL,             -- when a dispatcher may next claim it (also its lease)
    last_error          text,                             -- secret-free reason of the last failed attempt
    CONSTRAINT sos_incidents_public_id_key UNIQUE (public_id),
    CONSTRAINT sos_incidents_status_check CHECK (status IN ('detected', 'cancelled', 'dispatched', 'acknowledged', 'resolved'))
);
-- At most one open incident per individual, whichever instance detects it.
CREATE UNIQUE INDEX sos_incidents_one_open_idx ON sos_incidents (individual_id) WHERE status IN ('detected', 'dispatched', 'acknowledged');
-- Dispatchers look for the next due call here.
CREATE INDEX sos_incidents_due_idx ON sos_incidents (next_attempt_at) WHERE status = 'detected';
-- An individual's incidents, newest first; and the run check at every abnormal reading.
CREATE INDEX sos_incidents_individual_idx ON sos_incidents (individual_id, id);

-- Wakes dispatchers on every instance when an incident is opened.
CREATE FUNCTION data4help_notify_sos() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('data4help_sos', '');
    RETURN NULL;
END
$$;
CREATE TRIGGER sos_incidents_notify AFTER INSERT ON sos_incidents FOR EACH ROW EXECUTE FUNCTION data4help_notify_sos();

-- Emergency contacts with a webhook URL get an endpoint of their own (and a signing secret the
-- individual passes on to them); their notifications go through the webhook outbox.
ALTER TABLE webhook_endpoints
    ADD COLUMN sos_contact_of   bigint REFERENCES individuals (id) ON DELETE CASCADE,
    ADD COLUMN contact_position smallint,
    DROP CONSTRAINT webhook_endpoints_one_owner,
    ADD CONSTRAINT webhook_endpoints_one_owner CHECK (num_nonnulls(third_party_id, individual_id, sos_contact_of) = 1),
    ADD CONSTRAINT webhook_endpoints_contact_check CHECK ((sos_contact_of IS NULL) = (contact_position IS NULL)),
    ADD CONSTRAINT webhook_endpoints_contact_key UNIQUE (sos_contact_of, contact_position);
