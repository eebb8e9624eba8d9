-- The outbox of subscriptions: one event per subscribed grant and upload that brought it new
-- data, written in the upload's own transaction (nothing stored is ever missed by a subscriber).
-- An event refers to the data (types, time span and de-duplication keys) rather than copying
-- it, so whoever delivers it reads the data as it is then: nothing once the grant is revoked or
-- expired, nothing of an erased account.
CREATE TABLE data_events (
    id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,   -- the feed's order
    third_party_id bigint      NOT NULL REFERENCES third_parties (id) ON DELETE CASCADE,
    request_id     bigint      NOT NULL REFERENCES access_requests (id) ON DELETE CASCADE,
    individual_id  bigint      NOT NULL REFERENCES individuals (id) ON DELETE CASCADE,
    created_at     timestamptz NOT NULL DEFAULT now(),
    first_ms       bigint      NOT NULL,   -- earliest start among the items, epoch milliseconds
    last_ms        bigint      NOT NULL,   -- latest start among the items
    kinds          text[]      NOT NULL,   -- data type names, 'location' included
    keys           bigint[]    NOT NULL    -- de-duplication keys of the new items
);
-- A party's feed, in order.
CREATE INDEX data_events_third_party_idx ON data_events (third_party_id, id);
-- The subscribed grants of an individual, looked up by every upload.
CREATE INDEX access_requests_subscriptions_idx ON access_requests (individual_id) WHERE status = 'granted' AND subscribe;
