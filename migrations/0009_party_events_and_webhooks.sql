-- Everything a third party is told about, and the webhooks that tell it.
--
-- The outbox of 0008 becomes the party's event log: besides new data under a subscribed grant
-- ('data.created') it carries every decision about the party's requests. Events are written in
-- the transaction of what they report (an upload, a decision), so none is lost and none reports
-- something that did not happen. The pull feed, the server-sent event stream and the webhook
-- deliveries all read this one table.
ALTER TABLE data_events RENAME TO party_events;
ALTER INDEX data_events_third_party_idx RENAME TO party_events_third_party_idx;
ALTER TABLE party_events
    ADD COLUMN event_type text NOT NULL DEFAULT 'data.created',
    ALTER COLUMN first_ms DROP NOT NULL,
    ALTER COLUMN last_ms DROP NOT NULL,
    ALTER COLUMN kinds DROP NOT NULL,
    ALTER COLUMN keys DROP NOT NULL,
    ALTER COLUMN individual_id DROP NOT NULL,   -- a request nobody answered has no individual
    ADD CONSTRAINT party_events_type_check CHECK (event_type IN (
        'data.created', 'request.granted', 'request.denied', 'request.expired', 'grant.revoked', 'grant.expired')),
    -- Only data events refer to data, and they always do.
    ADD CONSTRAINT party_events_data_check CHECK ((event_type = 'data.created') =
        (first_ms IS NOT NULL AND last_ms IS NOT NULL AND kinds IS NOT NULL AND keys IS NOT NULL));

-- Every change of a request's state (access_request_history is append-only) is an event for the
-- party that filed it. 'expired' means the grant ended when something had been granted, and the
-- request lapsed unanswered otherwise.
CREATE FUNCTION data4help_party_event_for_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO party_events (third_party_id, request_id, individual_id, event_type)
    SELECT r.third_party_id, r.id, r.individual_id,
           CASE NEW.status
               WHEN 'granted' THEN 'request.granted'
               WHEN 'denied'  THEN 'request.denied'
               WHEN 'revoked' THEN 'grant.revoked'
               WHEN 'expired' THEN CASE WHEN r.granted_types IS NULL THEN 'request.expired' ELSE 'grant.expired' END
           END
    FROM access_requests r
    WHERE r.id = NEW.request_id AND NEW.status <> 'pending';
    RETURN NULL;
END
$$;
CREATE TRIGGER access_request_history_party_event
    AFTER INSERT ON access_request_history
    FOR EACH ROW EXECUTE FUNCTION data4help_party_event_for_change();

-- Where an account wants its events POSTed. A third party's endpoint receives its party events;
-- an individual's (a device's push endpoint) receives notifications such as a new request.
-- The signing secret is kept as is: the server must be able to sign with it (like Stripe's
-- endpoint secrets); it is shown to its owner only once.
CREATE TABLE webhook_endpoints (
    id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    third_party_id bigint      REFERENCES third_parties (id) ON DELETE CASCADE,
    individual_id  bigint      REFERENCES individuals (id) ON DELETE CASCADE,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    url            text        NOT NULL,
    secret         text        NOT NULL,
    CONSTRAINT webhook_endpoints_third_party_key UNIQUE (third_party_id),
    CONSTRAINT webhook_endpoints_individual_key  UNIQUE (individual_id),
    CONSTRAINT webhook_endpoints_one_owner       CHECK (num_nonnulls(third_party_id, individual_id) = 1)
);

-- The delivery outbox: one row per event and endpoint, retried until a 2xx or the last attempt.
-- public_id travels with every attempt (header Data4Help-Delivery): the receiver de-duplicates
-- on it. Deliveries of one grant (request_id) go out one at a time, in id order.
CREATE TABLE webhook_deliveries (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id       uuid        NOT NULL DEFAULT gen_random_uuid(),
    endpoint_id     bigint      NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id        bigint      REFERENCES party_events (id) ON DELETE CASCADE,
    request_id      bigint      REFERENCES access_requests (id) ON DELETE CASCADE,   -- the ordering key
    created_at      timestamptz NOT NULL DEFAULT now(),
    next_attempt_at timestamptz NOT NULL DEFAULT now(),   -- also the lease of an attempt under way
    finished_at     timestamptz,
    attempts        integer     NOT NULL DEFAULT 0,   -- every attempt ever made, numbering webhook_attempts
    round_attempts  integer     NOT NULL DEFAULT 0,   -- attempts since created or last redelivered
    state           text        NOT NULL DEFAULT 'pending',
    event_type      text        NOT NULL,
    payload         jsonb,       -- the event's own body when it is not read from party_events
    CONSTRAINT webhook_deliveries_public_id_key UNIQUE (public_id),
    CONSTRAINT webhook_deliveries_state_check CHECK (state IN ('pending', 'delivered', 'failed', 'cancelled')),
    CONSTRAINT webhook_deliveries_body_check CHECK (num_nonnulls(event_id, payload) = 1)
);
-- What is due, for the dispatchers of every instance.
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
-- The per-grant order: is an earlier delivery of the same grant still pending?
CREATE INDEX webhook_deliveries_order_idx ON webhook_deliveries (endpoint_id, request_id, id) WHERE state = 'pending';
-- An endpoint's delivery log, newest first.
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, id);
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (event_id);

-- Each attempt: when, how long, what came back.
CREATE TABLE webhook_attempts (
    delivery_id  bigint      NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    attempt      integer     NOT NULL,
    at           timestamptz NOT NULL,
    duration_ms  integer     NOT NULL,
    status_code  integer,    -- NULL when no answer came (refused, timed out, address not allowed)
    error        text,
    PRIMARY KEY (delivery_id, attempt)
);

-- A party's events become deliveries when it has an endpoint; dispatchers on every instance are
-- woken by the notification, which PostgreSQL sends at commit.
CREATE FUNCTION data4help_enqueue_party_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_deliveries (endpoint_id, event_id, request_id, event_type)
    SELECT w.id, e.id, e.request_id, e.event_type
    FROM new_events e JOIN webhook_endpoints w ON w.third_party_id = e.third_party_id
    ORDER BY e.id;
    IF EXISTS (SELECT 1 FROM new_events) THEN   -- statement triggers also fire for no rows
        PERFORM pg_notify('data4help_events', '');
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER party_events_enqueue_deliveries
    AFTER INSERT ON party_events REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION data4help_enqueue_party_deliveries();

CREATE FUNCTION data4help_notify_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM new_deliveries) THEN
        PERFORM pg_notify('data4help_events', '');
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER webhook_deliveries_notify
    AFTER INSERT ON webhook_deliveries REFERENCING NEW TABLE AS new_deliveries
    FOR EACH STATEMENT EXECUTE FUNCTION data4help_notify_deliveries();

-- The expiry sweep: pending requests past their expiry, grants past their end.
CREATE INDEX access_requests_lapse_idx     ON access_requests (expires_at)    WHERE status = 'pending';
CREATE INDEX access_requests_grant_end_idx ON access_requests (granted_until) WHERE status = 'granted';

-- State events outlive an erased individual (the party must still learn the grant was revoked);
-- data events are deleted with the account (IndividualStore.delete), as the data they point at is.
ALTER TABLE party_events DROP CONSTRAINT data_events_individual_id_fkey,
    ADD CONSTRAINT party_events_individual_id_fkey FOREIGN KEY (individual_id) REFERENCES individuals (id) ON DELETE SET NULL;
