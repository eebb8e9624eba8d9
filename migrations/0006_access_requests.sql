-- Access requests and the consent policies they become (HealthSharing's Access Policy Manager).
--
-- A request names its target by fiscal code, never by account: a code nobody has registered
-- gives a request like any other, which stays pending until it expires. The row holds the
-- current state of the policy; every change of it is also appended to access_request_history,
-- which is never updated.
CREATE TABLE access_requests (
    id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id      uuid        NOT NULL DEFAULT gen_random_uuid(),
    third_party_id bigint      NOT NULL REFERENCES third_parties (id) ON DELETE CASCADE,
    created_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz NOT NULL,   -- a pending request lapses then
    decided_at     timestamptz,
    -- What was asked.
    data_from      timestamptz,           -- open start when NULL
    data_to        timestamptz,           -- open end when NULL
    access_until   timestamptz,           -- no end when NULL
    subscribe      boolean     NOT NULL,
    status         text        NOT NULL DEFAULT 'pending',
    fiscal_code    text        NOT NULL,
    purpose        text        NOT NULL,
    types          text[]      NOT NULL,  -- data type names, 'location' included
    -- What was granted (set on acceptance; never wider than what was asked).
    individual_id  bigint      REFERENCES individuals (id) ON DELETE SET NULL,
    granted_types  text[],
    granted_from   timestamptz,
    granted_to     timestamptz,
    granted_until  timestamptz,
    CONSTRAINT access_requests_public_id_key UNIQUE (public_id),
    CONSTRAINT access_requests_status_check CHECK (status IN ('pending', 'granted', 'denied', 'revoked', 'expired'))
);
-- One pending request per party and person.
CREATE UNIQUE INDEX access_requests_one_pending_idx ON access_requests (third_party_id, fiscal_code) WHERE status = 'pending';
-- A party's requests, newest first.
CREATE INDEX access_requests_third_party_idx ON access_requests (third_party_id, id);
-- The requests that target a person.
CREATE INDEX access_requests_fiscal_code_idx ON access_requests (fiscal_code, id);

-- Every state a policy went through, with who moved it there and the scope it had then.
CREATE TABLE access_request_history (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,   -- the order of changes
    request_id    bigint      NOT NULL REFERENCES access_requests (id) ON DELETE CASCADE,
    at            timestamptz NOT NULL DEFAULT clock_timestamp(),
    status        text        NOT NULL,
    actor         text        NOT NULL,   -- third_party, individual, system
    granted_types text[],
    granted_from  timestamptz,
    granted_to    timestamptz,
    granted_until timestamptz
);
CREATE INDEX access_request_history_request_idx ON access_request_history (request_id, id);

-- Organisations an individual has blocked: their requests are denied at once.
CREATE TABLE blocked_parties (
    individual_id  bigint      NOT NULL REFERENCES individuals (id) ON DELETE CASCADE,
    third_party_id bigint      NOT NULL REFERENCES third_parties (id) ON DELETE CASCADE,
    blocked_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (individual_id, third_party_id)
);
