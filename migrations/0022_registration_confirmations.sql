-- Registration is confirmed by e-mail, so that its answer never tells whether an address or a
-- fiscal code already has an account (issue 19, finding 6). A registration waits here, under
-- the digest of the token mailed to its address, until that token comes back or it expires;
-- what it would become is kept typed, as the account tables keep it.
CREATE TABLE pending_registrations (
    id            bigserial   PRIMARY KEY,
    token_digest  bytea       NOT NULL UNIQUE,
    surface       text        NOT NULL CHECK (surface IN ('individual', 'thirdParty')),
    email         text        NOT NULL,
    password_hash text        NOT NULL,
    -- An individual's profile (all set for 'individual'), or an organisation's name.
    fiscal_code   text,
    full_name     text,
    birth_date    date,
    sex           text,
    home_area     text,
    organisation  text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL,
    CHECK (surface <> 'individual' OR (fiscal_code IS NOT NULL AND full_name IS NOT NULL AND birth_date IS NOT NULL
                                       AND sex IS NOT NULL AND home_area IS NOT NULL)),
    CHECK (surface <> 'thirdParty' OR organisation IS NOT NULL)
);

-- The janitor deletes expired registrations (they hold personal data nobody confirmed).
CREATE INDEX pending_registrations_expiry_idx ON pending_registrations (expires_at);

-- The outbound-mail outbox: a message is committed with the change it reports, and sent by
-- whichever instance leases it first. The body is cleared once sent (it may hold a token).
CREATE TABLE outbound_mail (
    id              bigserial   PRIMARY KEY,
    recipient       text        NOT NULL,
    subject         text        NOT NULL,
    body            text        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    attempts        int4        NOT NULL DEFAULT 0,
    leased_until    timestamptz,
    sent_at         timestamptz,
    last_error      text
);

-- Due messages, oldest first (the dispatcher's lease).
CREATE INDEX outbound_mail_due_idx ON outbound_mail (next_attempt_at) WHERE sent_at IS NULL;
-- Messages to one address lately (the per-recipient cap that stops mail bombing).
CREATE INDEX outbound_mail_recipient_idx ON outbound_mail (recipient, created_at);
