-- Imported history compacted into 8-hour blocks (issue 27: 8 bytes a sample).
--
-- An import writes settled history as hour blocks (it cannot tell, batch by batch, whether an
-- 8-hour window will be sparse), and the compactor's periodic pass only covers the hours that
-- crossed its horizon since the last one: an import of last year's history would stay in hour
-- blocks (12.9 bytes a reading for a watch's heart rate against 7.5 compacted, `bench storage`).
-- An import that ends (done, failed or cancelled) therefore asks for its span to be compacted: a
-- row per individual, widened by later imports, that the compactor's next pass takes before its
-- own work (SampleCompactor), compacting the span up to the pass's horizon, and deletes.
CREATE TABLE compaction_requests (
    individual_id bigint      PRIMARY KEY REFERENCES individuals (id) ON DELETE CASCADE,
    from_at       timestamptz NOT NULL,
    before_at     timestamptz NOT NULL
);
