-- Every disclosure of an individual's data to a third party: when, to whom, under which request,
-- which types, how many items, through which channel. Append-only; the individual reads it,
-- the third party cannot change it.
CREATE TABLE disclosures (
    id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    individual_id  bigint      NOT NULL REFERENCES individuals (id) ON DELETE CASCADE,
    third_party_id bigint      NOT NULL REFERENCES third_parties (id) ON DELETE CASCADE,
    request_id     bigint      NOT NULL REFERENCES access_requests (id) ON DELETE CASCADE,
    at             timestamptz NOT NULL DEFAULT now(),
    item_count     integer     NOT NULL,
    channel        text        NOT NULL,   -- pull, stream, webhook
    types          text[]      NOT NULL,
    CONSTRAINT disclosures_channel_check CHECK (channel IN ('pull', 'stream', 'webhook'))
);
-- An individual's access log, newest first.
CREATE INDEX disclosures_individual_idx ON disclosures (individual_id, id);
