-- What makes a grant active, and what it covers, written once (issue 20): every statement that
-- decides whether an organisation may see or be told about a sample calls these functions
-- instead of spelling the rule out. They are plain SQL functions over columns, so the planner
-- inlines them: a partial index on `status = 'granted'` still serves a query that calls them.
-- AccessManager's Swift side of the same rule is `GrantScope` (HealthSharing/AccessPolicy).

-- A grant is active from its acceptance until its end (`granted_until`, none = open-ended),
-- unless revoked, denied or expired before.
CREATE FUNCTION access_grant_active(status text, granted_until timestamptz) RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT status = 'granted' AND (granted_until IS NULL OR granted_until > now()) $$;

-- A grant whose end has passed but which is not yet recorded as expired (the janitor's work;
-- reads already treat it as expired). Served by `access_requests_grant_end_idx`.
CREATE FUNCTION access_grant_lapsed(status text, granted_until timestamptz) RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT status = 'granted' AND granted_until <= now() $$;

-- A pending request past its expiry, not yet recorded as expired. Served by `access_requests_lapse_idx`.
CREATE FUNCTION access_request_lapsed(status text, expires_at timestamptz) RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT status = 'pending' AND expires_at <= now() $$;

-- The status a reader sees: the stored one, or `expired` once a pending request or a grant has lapsed.
CREATE FUNCTION access_request_effective_status(status text, expires_at timestamptz, granted_until timestamptz) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
        SELECT CASE WHEN access_request_lapsed(status, expires_at) OR access_grant_lapsed(status, granted_until) THEN 'expired'
                    ELSE status END
    $$;

-- Whether a grant's scope covers an item of `kind` (a sample type's name, or 'location') taken at
-- `at_ms` (milliseconds since the epoch): the kind is granted and the time is in `[granted_from, granted_to)`.
CREATE FUNCTION access_grant_covers(granted_types text[], granted_from timestamptz, granted_to timestamptz, kind text, at_ms int8)
    RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
        SELECT kind = ANY (granted_types)
           AND (granted_from IS NULL OR at_ms >= (extract(epoch FROM granted_from) * 1000)::int8)
           AND (granted_to IS NULL OR at_ms < (extract(epoch FROM granted_to) * 1000)::int8)
    $$;
