-- Share links (issue 24): an individual shares chosen types over a window with someone who has
-- no account — a doctor — by a link `/s/{token}` that shows charts and a printable summary.
--
-- Only the SHA-256 of the token is stored (the link is shown once, at creation): a stolen copy
-- of the database opens no link, and a lookup by the hash compares nothing secret byte by byte.
-- An optional PIN is stored as an Argon2id hash; wrong PINs are counted and lock the link at
-- the tenth. Every opening is a row of share_link_views — with an address digest, never the
-- address — and, when data was shown, a disclosure in the person's access log.
CREATE TABLE share_links (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id     uuid        NOT NULL DEFAULT gen_random_uuid(),
    individual_id bigint      NOT NULL REFERENCES individuals (id) ON DELETE CASCADE,
    token_hash    bytea       NOT NULL,
    label         text        NOT NULL,   -- the person's own name for it ("Dr Rossi, cardiology")
    sample_types  smallint[]  NOT NULL,   -- SampleType.storageCode
    data_from     timestamptz NOT NULL,
    data_to       timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    pin_hash      text,                   -- Argon2id (encoded), when a PIN is asked
    failed_pins   integer     NOT NULL DEFAULT 0,
    created_at    timestamptz NOT NULL DEFAULT now(),
    revoked_at    timestamptz,
    CONSTRAINT share_links_public_id_key UNIQUE (public_id),
    CONSTRAINT share_links_token_hash_key UNIQUE (token_hash),
    CONSTRAINT share_links_token_hash_check CHECK (length(token_hash) = 32),
    CONSTRAINT share_links_types_check CHECK (cardinality(sample_types) BETWEEN 1 AND 64),
    CONSTRAINT share_links_window_check CHECK (data_from < data_to),
    -- At most 30 days (a minute's grace for the clock between the check and the insert).
    CONSTRAINT share_links_expiry_check CHECK (expires_at <= created_at + interval '30 days 1 minute')
);
-- A person's links, newest first.
CREATE INDEX share_links_individual_idx ON share_links (individual_id, id);

-- Every opening of a link: shown, refused for a wrong PIN, or refused because it is locked.
CREATE TABLE share_link_views (
    id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    link_id        bigint      NOT NULL REFERENCES share_links (id) ON DELETE CASCADE,
    at             timestamptz NOT NULL DEFAULT now(),
    address_digest bytea       NOT NULL,   -- SHA-256 of a server secret and the address: "same address or not", no address
    outcome        text        NOT NULL,
    CONSTRAINT share_link_views_outcome_check CHECK (outcome IN ('shown', 'wrong_pin', 'locked'))
);
CREATE INDEX share_link_views_link_idx ON share_link_views (link_id, id);

-- The secret of the address digests, made here from the server's strong random source (two
-- version-4 UUIDs: 244 random bits). Shared by every instance, like the cursor key.
INSERT INTO server_secrets (name, secret)
VALUES ('share-link-address', decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'))
ON CONFLICT (name) DO NOTHING;

-- A view that showed data is a disclosure in the person's access log, to the link.
ALTER TABLE disclosures
    ADD COLUMN share_link_id bigint REFERENCES share_links (id) ON DELETE CASCADE,
    DROP CONSTRAINT disclosures_channel_check,
    ADD CONSTRAINT disclosures_channel_check CHECK (channel IN ('pull', 'stream', 'webhook', 'carer', 'share_link')),
    DROP CONSTRAINT disclosures_recipient_check,
    ADD CONSTRAINT disclosures_recipient_check CHECK (
        (care_link_id IS NULL AND share_link_id IS NULL AND third_party_id IS NOT NULL AND request_id IS NOT NULL)
        OR (care_link_id IS NOT NULL AND share_link_id IS NULL AND third_party_id IS NULL AND request_id IS NULL)
        OR (share_link_id IS NOT NULL AND care_link_id IS NULL AND third_party_id IS NULL AND request_id IS NULL));
