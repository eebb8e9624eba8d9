-- Secrets the instances of one deployment must share and nobody needs to configure: the key
-- that authenticates pagination cursors (HMAC-SHA256). The first instance to start writes a
-- random one; every instance reads the same row. Rotating a key = deleting its row and
-- restarting (cursors in flight then answer 422 and clients start from the first page).
CREATE TABLE server_secrets (
    name       text        PRIMARY KEY,
    secret     bytea       NOT NULL CHECK (length(secret) >= 32),
    created_at timestamptz NOT NULL DEFAULT now()
);
