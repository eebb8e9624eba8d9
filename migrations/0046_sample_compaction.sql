-- Compaction of settled history: minute blocks become hour blocks.
--
-- A minute block suits data as it arrives (an upload rewrites one small block), but it is a row,
-- two index entries and five array headers for every minute that has a reading: 104.7 bytes a
-- reading for an Apple Watch's heart rate every 5 minutes, 21.1 at 1 Hz (`bench storage`,
-- 2026-11-27), where an hour block costs 22.9 and 13.9. Once an hour is older than the
-- late-data horizon (DataManager.settledAfter, 49 hours), nothing amends it often, so the
-- compactor (HealthSharing's SampleCompactor) merges its minute blocks into one hour block:
-- the same samples, offsets from the hour, in the order an hour block written by an import has
-- (offset, key). The rule of migration 0032 holds throughout: within one individual, type and
-- hour there is one hour block or only minute blocks; each hour is merged in one transaction,
-- under the individual's ingest lock, so no upload sees it half-merged.
--
-- This migration moves no data: the compactor does, online, one individual and at most a day of
-- hours per transaction, so no lock is held for longer than one such merge and every upload
-- goes on meanwhile. A database holding years of minute blocks is compacted by its first pass;
-- a pass that stops (a crash, a deploy) resumes from the last individual it recorded here.
CREATE TABLE sample_compaction (
    singleton        boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    -- Every hour before this has been compacted (a pass looks a day further back again for
    -- stragglers: an instance whose clock runs behind may still have written a minute block).
    compacted_before timestamptz NOT NULL DEFAULT '-infinity',
    -- The pass in progress: the hours it compacts end here (NULL: none in progress) and the
    -- individuals up to this id are done.
    pass_before      timestamptz,
    pass_after       bigint      NOT NULL DEFAULT 0,
    -- One instance runs a pass at a time: the one holding this lease, renewed with each batch.
    leased_until     timestamptz NOT NULL DEFAULT '-infinity'
);
INSERT INTO sample_compaction DEFAULT VALUES;
