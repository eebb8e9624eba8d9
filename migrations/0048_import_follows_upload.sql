-- Reading an Apple Health export.xml while it is still arriving (issue 21). A worker may claim
-- an import that is still `uploading` once enough of it has arrived beyond where its reading
-- stands, and follows the upload chunk by chunk; the import stays `uploading` (the upload's own
-- rules are unchanged) and becomes `running` when the last part arrives. A worker that catches
-- up with an upload that has paused (a phone on a slow network) commits, gives the claim back
-- and is free for other imports; once enough more has arrived, any worker takes it up again.
--
-- `attempts` stays the claims' fencing token (every claim increments it; a commit of an older
-- claim is refused). `released` counts the claims given back that way, which are not failures:
-- only `attempts - released` counts towards the limit of claims that stopped without a word
-- (a worker that died).
ALTER TABLE imports ADD COLUMN released integer NOT NULL DEFAULT 0;

-- The queue the workers claim from now includes the uploads they may follow.
DROP INDEX imports_queue_idx;
CREATE INDEX imports_queue_idx ON imports (id) WHERE state IN ('uploading', 'queued', 'running');
