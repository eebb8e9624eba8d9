-- Signatures of the dispatch centre's reports seen in the last minutes: a report's signature is
-- accepted once, so a captured report cannot be replayed within the 5-minute tolerance of its
-- timestamp. Kept as SHA-256 digests; rows older than the tolerance are purged as new ones come.
CREATE TABLE dispatch_report_signatures (
    digest  text        PRIMARY KEY,
    seen_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX dispatch_report_signatures_seen_idx ON dispatch_report_signatures (seen_at);
