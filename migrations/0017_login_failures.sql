-- Failed sign-ins, counted per account and per client address in fixed windows. Kept in
-- PostgreSQL, not in each instance's memory, so the brute-force limit holds however many
-- instances the balancer spreads the guesses over. Keys are SHA-256 digests
-- ('account:<surface>:<email>', 'address:<ip>'): no address or email is stored in clear.
CREATE TABLE login_failures (
    key_digest   text        PRIMARY KEY,
    window_start timestamptz NOT NULL,
    failures     int4        NOT NULL
);

-- Windows long over are deleted by the token janitor's sweep.
CREATE INDEX login_failures_window_idx ON login_failures (window_start);
