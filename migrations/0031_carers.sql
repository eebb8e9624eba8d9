-- Carers: an individual invites another Data4Help individual, by e-mail, to follow chosen types
-- of their data and to receive chosen watch rules' alerts (glUCModel's caregiver monitoring).
--
-- The invitation names an address, not an account: whoever holds an account with that address
-- sees the invitation and may accept (the link then names them) or decline; an invitation to an
-- address without an account simply waits (the inviter is never told whether one exists). Either
-- side ends an accepted link; an ended, declined or withdrawn link shows nothing any more.
CREATE TABLE care_links (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id     uuid        NOT NULL DEFAULT gen_random_uuid(),
    individual_id bigint      NOT NULL REFERENCES individuals (id) ON DELETE CASCADE,   -- the person cared for
    carer_email   text        NOT NULL,                                                 -- as invited, lower case
    carer_id      bigint      REFERENCES individuals (id) ON DELETE CASCADE,            -- set on acceptance
    sample_types  smallint[]  NOT NULL,                                                 -- SampleType.storageCode
    status        text        NOT NULL DEFAULT 'invited',
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    responded_at  timestamptz,
    ended_at      timestamptz,
    ended_by      text,
    CONSTRAINT care_links_public_id_key UNIQUE (public_id),
    CONSTRAINT care_links_status_check CHECK (status IN ('invited', 'accepted', 'declined', 'ended')),
    CONSTRAINT care_links_carer_check CHECK ((status = 'accepted') <= (carer_id IS NOT NULL)),
    CONSTRAINT care_links_ended_check CHECK ((status = 'ended') = (ended_at IS NOT NULL AND ended_by IN ('individual', 'carer'))),
    CONSTRAINT care_links_types_check CHECK (cardinality(sample_types) BETWEEN 1 AND 64)
);
-- One open link (invited or accepted) per person and address.
CREATE UNIQUE INDEX care_links_open_idx ON care_links (individual_id, carer_email) WHERE status IN ('invited', 'accepted');
-- Invitations to an address; the people a carer cares for.
CREATE INDEX care_links_email_idx ON care_links (carer_email) WHERE status = 'invited';
CREATE INDEX care_links_carer_idx ON care_links (carer_id) WHERE status = 'accepted';
CREATE INDEX care_links_individual_idx ON care_links (individual_id, id);

-- The rules whose alerts the carer receives (the person's own rules only: the application checks).
CREATE TABLE care_link_rules (
    link_id bigint NOT NULL REFERENCES care_links (id) ON DELETE CASCADE,
    rule_id bigint NOT NULL REFERENCES watch_rules (id) ON DELETE CASCADE,
    PRIMARY KEY (link_id, rule_id)
);
-- An alert's carers.
CREATE INDEX care_link_rules_rule_idx ON care_link_rules (rule_id);

-- The access log records what carers were shown, as it records what organisations were sent:
-- a disclosure is to an organisation under a request, or to a carer under a care link.
ALTER TABLE disclosures ALTER COLUMN third_party_id DROP NOT NULL, ALTER COLUMN request_id DROP NOT NULL,
    ADD COLUMN care_link_id bigint REFERENCES care_links (id) ON DELETE CASCADE,
    DROP CONSTRAINT disclosures_channel_check,
    ADD CONSTRAINT disclosures_channel_check CHECK (channel IN ('pull', 'stream', 'webhook', 'carer')),
    ADD CONSTRAINT disclosures_recipient_check CHECK (
        (care_link_id IS NULL AND third_party_id IS NOT NULL AND request_id IS NOT NULL)
        OR (care_link_id IS NOT NULL AND third_party_id IS NULL AND request_id IS NULL));
