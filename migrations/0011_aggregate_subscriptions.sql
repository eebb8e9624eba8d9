-- Group subscriptions: an approved aggregate query recomputed for every new day or week, each
-- result delivered to the party as an event (webhook, stream), within its privacy budget.

-- Party events may now report an aggregate instead of a request.
ALTER TABLE party_events
    ALTER COLUMN request_id DROP NOT NULL,
    ADD COLUMN aggregate_id bigint REFERENCES aggregate_queries (id) ON DELETE CASCADE,
    DROP CONSTRAINT party_events_type_check,
    ADD CONSTRAINT party_events_type_check CHECK (event_type IN (
        'data.created', 'request.granted', 'request.denied', 'request.expired', 'grant.revoked', 'grant.expired',
        'aggregate.updated', 'aggregate.stopped')),
    ADD CONSTRAINT party_events_subject_check CHECK ((request_id IS NULL) <> (aggregate_id IS NULL));

CREATE TABLE aggregate_subscriptions (
    id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id      uuid        NOT NULL DEFAULT gen_random_uuid(),
    third_party_id bigint      NOT NULL REFERENCES third_parties (id) ON DELETE CASCADE,
    query_id       bigint      NOT NULL REFERENCES aggregate_queries (id) ON DELETE CASCADE,   -- the approved spec
    last_query_id  bigint      REFERENCES aggregate_queries (id) ON DELETE SET NULL,          -- the latest recomputation
    created_at     timestamptz NOT NULL DEFAULT now(),
    next_run_at    timestamptz NOT NULL,   -- also the lease of a run under way
    runs           integer     NOT NULL DEFAULT 0,
    period         text        NOT NULL,
    status         text        NOT NULL DEFAULT 'active',
    stopped_reason text,
    CONSTRAINT aggregate_subscriptions_public_id_key UNIQUE (public_id),
    CONSTRAINT aggregate_subscriptions_query_key UNIQUE (query_id),
    CONSTRAINT aggregate_subscriptions_period_check CHECK (period IN ('daily', 'weekly')),
    CONSTRAINT aggregate_subscriptions_status_check CHECK (status IN ('active', 'stopped'))
);
CREATE INDEX aggregate_subscriptions_due_idx ON aggregate_subscriptions (next_run_at) WHERE status = 'active';
