-- Organisations' public profiles and the directory (issue 24), and offers: an individual starts
-- a share by offering chosen data to an organisation, which accepts or declines.

-- What an organisation tells people about itself. Shown beside its requests and offers (so a
-- person decides knowing who asks); listed in the directory only when the organisation opts in.
CREATE TABLE organisation_profiles (
    third_party_id  bigint      PRIMARY KEY REFERENCES third_parties (id) ON DELETE CASCADE,
    listed          boolean     NOT NULL DEFAULT false,
    purpose         text        NOT NULL,
    privacy_contact text        NOT NULL,   -- an e-mail address
    website         text,                   -- an https URL
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT organisation_profiles_purpose_check CHECK (char_length(purpose) BETWEEN 1 AND 2000)
);
-- The directory: the listed organisations (few enough to read in name order).
CREATE INDEX organisation_profiles_listed_idx ON organisation_profiles (third_party_id) WHERE listed;

-- An individual's offer. While 'offered' (and before expires_at) the organisation may accept —
-- the offer then becomes a grant like any other, an access_requests row 'granted' at once, named
-- in request_id — or decline; the individual may withdraw it.
CREATE TABLE data_offers (
    id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id      uuid        NOT NULL DEFAULT gen_random_uuid(),
    individual_id  bigint      NOT NULL REFERENCES individuals (id) ON DELETE CASCADE,
    third_party_id bigint      NOT NULL REFERENCES third_parties (id) ON DELETE CASCADE,
    message        text        NOT NULL,
    types          text[]      NOT NULL,   -- data type names, 'location' included
    data_from      timestamptz,
    data_to        timestamptz,
    access_until   timestamptz,
    subscribe      boolean     NOT NULL,
    status         text        NOT NULL DEFAULT 'offered',
    created_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz NOT NULL,   -- an unanswered offer lapses then
    decided_at     timestamptz,
    request_id     bigint      REFERENCES access_requests (id) ON DELETE SET NULL,
    CONSTRAINT data_offers_public_id_key UNIQUE (public_id),
    CONSTRAINT data_offers_status_check CHECK (status IN ('offered', 'accepted', 'declined', 'withdrawn', 'expired')),
    CONSTRAINT data_offers_types_check CHECK (cardinality(types) BETWEEN 1 AND 64)
);
-- One open offer per person and organisation; a person's offers; an organisation's offers.
CREATE UNIQUE INDEX data_offers_open_idx ON data_offers (individual_id, third_party_id) WHERE status = 'offered';
CREATE INDEX data_offers_individual_idx ON data_offers (individual_id, id);
CREATE INDEX data_offers_third_party_idx ON data_offers (third_party_id, id);

-- The grant an accepted offer became knows its offer (the individual's pages say "you offered").
ALTER TABLE access_requests ADD COLUMN offer_id bigint REFERENCES data_offers (id) ON DELETE SET NULL;

-- An organisation reads and answers only its own offers and profile (as 0018 for its requests).
ALTER TABLE data_offers ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON data_offers TO data4help_tenant
    USING (third_party_id = nullif(current_setting('data4help.third_party_id', true), '')::int8)
    WITH CHECK (third_party_id = nullif(current_setting('data4help.third_party_id', true), '')::int8);
ALTER TABLE organisation_profiles ENABLE ROW LEVEL SECURITY;
-- Every organisation may read the listed profiles (the directory), and writes only its own.
CREATE POLICY tenant_rows ON organisation_profiles TO data4help_tenant
    USING (listed OR third_party_id = nullif(current_setting('data4help.third_party_id', true), '')::int8)
    WITH CHECK (third_party_id = nullif(current_setting('data4help.third_party_id', true), '')::int8);
