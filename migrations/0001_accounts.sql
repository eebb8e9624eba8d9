-- Accounts of the two kinds of users and the credentials they authenticate with.
-- Internal keys are bigint identities (compact, for the large tables that reference them);
-- the API only ever shows the random public_id.
-- Columns are ordered widest-fixed first to avoid alignment padding.

CREATE TABLE individuals (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id     uuid        NOT NULL DEFAULT gen_random_uuid(),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    birth_date    date        NOT NULL,
    sex           text        NOT NULL,
    email         text        NOT NULL,   -- normalised to lower case by the application
    fiscal_code   text        NOT NULL,   -- normalised to upper case; how third parties name a person
    full_name     text        NOT NULL,
    home_area     text        NOT NULL,   -- ISO 3166-2 subdivision, never an address
    time_zone     text        NOT NULL DEFAULT 'UTC',
    password_hash text        NOT NULL,   -- Argon2id encoded string
    CONSTRAINT individuals_public_id_key   UNIQUE (public_id),
    CONSTRAINT individuals_email_key       UNIQUE (email),
    CONSTRAINT individuals_fiscal_code_key UNIQUE (fiscal_code),
    CONSTRAINT individuals_sex_check       CHECK (sex IN ('female', 'male', 'other'))
);

-- A third-party organisation is a tenant: everything it owns references this row.
CREATE TABLE third_parties (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id     uuid        NOT NULL DEFAULT gen_random_uuid(),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    name          text        NOT NULL,
    email         text        NOT NULL,
    password_hash text        NOT NULL,
    CONSTRAINT third_parties_public_id_key UNIQUE (public_id),
    CONSTRAINT third_parties_email_key     UNIQUE (email)
);

-- Login (bearer) tokens of either kind of account. Only the SHA-256 of a token is stored.
CREATE TABLE access_tokens (
    id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id      uuid        NOT NULL DEFAULT gen_random_uuid(),
    individual_id  bigint      REFERENCES individuals (id) ON DELETE CASCADE,
    third_party_id bigint      REFERENCES third_parties (id) ON DELETE CASCADE,
    created_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz NOT NULL,
    last_used_at   timestamptz,
    revoked_at     timestamptz,
    token_hash     bytea       NOT NULL,
    CONSTRAINT access_tokens_public_id_key  UNIQUE (public_id),
    CONSTRAINT access_tokens_token_hash_key UNIQUE (token_hash),   -- the per-request lookup
    CONSTRAINT access_tokens_one_owner      CHECK (num_nonnulls(individual_id, third_party_id) = 1)
);
-- Listing an account's tokens, newest first.
CREATE INDEX access_tokens_individual_idx  ON access_tokens (individual_id, id)  WHERE individual_id IS NOT NULL;
CREATE INDEX access_tokens_third_party_idx ON access_tokens (third_party_id, id) WHERE third_party_id IS NOT NULL;
-- Purging long-expired tokens.
CREATE INDEX access_tokens_expires_at_idx  ON access_tokens (expires_at);

-- Long-lived API keys of third parties. The secret is shown once; its SHA-256 is stored.
CREATE TABLE api_keys (
    id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id      uuid        NOT NULL DEFAULT gen_random_uuid(),
    third_party_id bigint      NOT NULL REFERENCES third_parties (id) ON DELETE CASCADE,
    created_at     timestamptz NOT NULL DEFAULT now(),
    last_used_at   timestamptz,
    revoked_at     timestamptz,
    name           text        NOT NULL,
    prefix         text        NOT NULL,   -- visible part, shown in listings to tell keys apart
    key_hash       bytea       NOT NULL,
    CONSTRAINT api_keys_public_id_key UNIQUE (public_id),
    CONSTRAINT api_keys_prefix_key    UNIQUE (prefix),
    CONSTRAINT api_keys_key_hash_key  UNIQUE (key_hash)            -- the per-request lookup
);
-- Listing a tenant's keys, newest first.
CREATE INDEX api_keys_third_party_idx ON api_keys (third_party_id, id);
