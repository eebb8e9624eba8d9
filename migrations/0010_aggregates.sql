-- Anonymised group queries (HealthSharing's Data Elaboration Module): each query, the privacy
-- budget it spent, its released (noisy) answer, and an append-only hash-chained audit log.

-- One row per query a party ran. A query reserves its ε when it starts (status 'running'), so
-- concurrent queries cannot overspend; a query that failed before answering gives it back.
-- The answer is the released, noisy one — exact figures are never stored.
CREATE TABLE aggregate_queries (
    id                 bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id          uuid        NOT NULL DEFAULT gen_random_uuid(),
    third_party_id     bigint      NOT NULL REFERENCES third_parties (id) ON DELETE CASCADE,
    created_at         timestamptz NOT NULL DEFAULT now(),
    answered_at        timestamptz,
    epsilon_hundredths integer     NOT NULL,
    status             text        NOT NULL DEFAULT 'running',
    fingerprint        bytea       NOT NULL,   -- SHA-256 of the normalised spec: "the same question"
    spec               jsonb       NOT NULL,
    answer             jsonb,
    CONSTRAINT aggregate_queries_public_id_key UNIQUE (public_id),
    CONSTRAINT aggregate_queries_status_check CHECK (status IN ('running', 'answered', 'refused', 'failed')),
    CONSTRAINT aggregate_queries_epsilon_check CHECK (epsilon_hundredths BETWEEN 1 AND 10000)
);
-- A repeated question (same party, same spec, within 30 days) gets the stored answer.
CREATE INDEX aggregate_queries_repeat_idx ON aggregate_queries (third_party_id, fingerprint, created_at);
-- A party's spending over the rolling windows, and its listing.
CREATE INDEX aggregate_queries_party_idx ON aggregate_queries (third_party_id, created_at);

-- Every query and its outcome, chained: hash = SHA-256(previous hash ‖ the row's canonical
-- line), so an edited, removed or reordered row breaks every hash after it
-- (`data4help audit verify`). The table refuses UPDATE, DELETE and TRUNCATE.
CREATE TABLE aggregate_audit (
    id                 bigint      PRIMARY KEY,   -- 1, 2, 3 … without gaps, assigned under a lock
    at_ms              bigint      NOT NULL,
    third_party        uuid        NOT NULL,      -- public ids: the log outlives accounts
    query              uuid        NOT NULL,
    fingerprint        bytea       NOT NULL,
    epsilon_hundredths integer     NOT NULL,      -- spent by this query (0 for a repeat)
    decision           text        NOT NULL,      -- answered, refused, repeat
    answer             text        NOT NULL,      -- the released answer, as sent
    previous_hash      bytea       NOT NULL,
    hash               bytea       NOT NULL
);

CREATE FUNCTION data4help_refuse_audit_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'aggregate_audit is append-only';
END
$$;
CREATE TRIGGER aggregate_audit_append_only BEFORE UPDATE OR DELETE ON aggregate_audit
    FOR EACH ROW EXECUTE FUNCTION data4help_refuse_audit_change();
CREATE TRIGGER aggregate_audit_no_truncate BEFORE TRUNCATE ON aggregate_audit
    FOR EACH STATEMENT EXECUTE FUNCTION data4help_refuse_audit_change();

-- Aggregates read each individual's totals of one type over a window of up to a year. Reading
-- 365 daily rows per person is too slow for a population, so daily rollups are also summed per
-- calendar month (sums of sums, counts and days: every part is additive, so triggers keep the
-- months exact under late data, re-sent data, time-zone rebuilds and erasure). A window reads
-- its whole months here and only its partial edge months from daily_rollups.
CREATE TABLE monthly_rollups (
    individual_id bigint           NOT NULL REFERENCES individuals (id) ON DELETE CASCADE,
    sample_type   smallint         NOT NULL,
    month         date             NOT NULL,   -- the first day of the month
    days          integer          NOT NULL,   -- days with data
    sample_count  bigint           NOT NULL,
    value_sum     double precision NOT NULL,
    PRIMARY KEY (individual_id, sample_type, month)
);
CREATE INDEX monthly_rollups_type_month_idx ON monthly_rollups (sample_type, month) INCLUDE (individual_id, days, sample_count, value_sum);
-- The edge days of a window.
CREATE INDEX daily_rollups_type_day_idx ON daily_rollups (sample_type, day) INCLUDE (individual_id, value_sum, sample_count);

-- Adds (sign 1) or takes away (sign -1) daily rows from their months.
CREATE FUNCTION data4help_roll_months(changed daily_rollups[], sign integer) RETURNS void LANGUAGE sql AS $$
    INSERT INTO monthly_rollups AS m (individual_id, sample_type, month, days, sample_count, value_sum)
    SELECT c.individual_id, c.sample_type, date_trunc('month', c.day)::date, sign * count(*), sign * sum(c.sample_count), sign * sum(c.value_sum)
    FROM unnest(changed) AS c
    GROUP BY 1, 2, 3
    ON CONFLICT (individual_id, sample_type, month) DO UPDATE SET
        days = m.days + EXCLUDED.days,
        sample_count = m.sample_count + EXCLUDED.sample_count,
        value_sum = m.value_sum + EXCLUDED.value_sum
$$;

CREATE FUNCTION data4help_daily_rollups_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM data4help_roll_months(ARRAY(SELECT n::daily_rollups FROM new_rows n), 1);
    RETURN NULL;
END
$$;
CREATE FUNCTION data4help_daily_rollups_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM data4help_roll_months(ARRAY(SELECT o::daily_rollups FROM old_rows o), -1);
    PERFORM data4help_roll_months(ARRAY(SELECT n::daily_rollups FROM new_rows n), 1);
    RETURN NULL;
END
$$;
CREATE FUNCTION data4help_daily_rollups_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM data4help_roll_months(ARRAY(SELECT o::daily_rollups FROM old_rows o
                                        WHERE EXISTS (SELECT 1 FROM individuals i WHERE i.id = o.individual_id)), -1);
    RETURN NULL;
END
$$;
CREATE TRIGGER daily_rollups_months_insert AFTER INSERT ON daily_rollups REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION data4help_daily_rollups_inserted();
CREATE TRIGGER daily_rollups_months_update AFTER UPDATE ON daily_rollups REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION data4help_daily_rollups_updated();
CREATE TRIGGER daily_rollups_months_delete AFTER DELETE ON daily_rollups REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION data4help_daily_rollups_deleted();

INSERT INTO monthly_rollups (individual_id, sample_type, month, days, sample_count, value_sum)
SELECT individual_id, sample_type, date_trunc('month', day)::date, count(*), sum(sample_count), sum(value_sum)
FROM daily_rollups GROUP BY 1, 2, 3;
