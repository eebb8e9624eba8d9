-- Files people import — an Apple Health export, a GPX activity — and the background jobs that
-- read them. The file itself is kept here, in chunks, not on one instance's disk: any instance
-- can take the job over, and an upload cut off by a bad network can go on where it stopped
-- (the chunks received are committed as they arrive).
CREATE TABLE imports (
    id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id        uuid        NOT NULL DEFAULT gen_random_uuid(),
    individual_id    bigint      NOT NULL REFERENCES individuals (id) ON DELETE CASCADE,
    format           text        NOT NULL,
    state            text        NOT NULL DEFAULT 'uploading',
    created_at       timestamptz NOT NULL DEFAULT now(),
    uploaded_at      timestamptz,
    started_at       timestamptz,
    finished_at      timestamptz,
    bytes_received   bigint      NOT NULL DEFAULT 0,
    bytes_processed  bigint      NOT NULL DEFAULT 0,   -- of the file as read (inflated, for a ZIP entry)
    records          bigint      NOT NULL DEFAULT 0,   -- records read, stored or not
    -- Where reading resumes after a crash: the position of the last commit (format-specific).
    checkpoint       jsonb,
    -- Per type accepted / duplicates, rejections by reason with examples, skipped types: what
    -- the commits so far stored, never more (written in the same transaction as the data).
    figures          jsonb       NOT NULL DEFAULT '{}',
    failure          text,       -- why a failed import failed, in words for its owner
    lease_until      timestamptz,   -- a running job's owner renews it with every commit
    attempts         integer     NOT NULL DEFAULT 0,
    CONSTRAINT imports_public_id_key UNIQUE (public_id),
    CONSTRAINT imports_format_check CHECK (format IN ('apple-health-xml', 'apple-health-zip', 'gpx')),   -- more come with their readers
    CONSTRAINT imports_state_check CHECK (state IN ('uploading', 'queued', 'running', 'done', 'failed', 'cancelled')),
    CONSTRAINT imports_failure_check CHECK ((state = 'failed') = (failure IS NOT NULL))
);
CREATE INDEX imports_individual_idx ON imports (individual_id, id DESC);
-- The queue the workers claim from.
CREATE INDEX imports_queue_idx ON imports (id) WHERE state IN ('queued', 'running');

-- The file's bytes in order; `position` is the offset of the chunk's first byte.
CREATE TABLE import_chunks (
    import_id  bigint  NOT NULL REFERENCES imports (id) ON DELETE CASCADE,
    seq        integer NOT NULL,
    position   bigint  NOT NULL,
    bytes      bytea   NOT NULL,
    PRIMARY KEY (import_id, seq)
);

-- Workers wake at once when a job is queued.
CREATE FUNCTION data4help_notify_imports() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('data4help_imports', NEW.id::text);
    RETURN NULL;
END
$$;
CREATE TRIGGER imports_notify AFTER INSERT OR UPDATE OF state ON imports
    FOR EACH ROW WHEN (NEW.state = 'queued') EXECUTE FUNCTION data4help_notify_imports();
