-- Imported history is announced once per import, kind and subscribed grant (`data.imported`),
-- not batch by batch: the event names the kind and the time span the import added to (within
-- the grant's window) and how many items, when they are all within it; the party reads the data
-- by cursor. It refers to no keys: a million imported samples are one event, not a million items.
ALTER TABLE party_events
    ADD COLUMN item_count bigint,
    DROP CONSTRAINT party_events_type_check,
    ADD CONSTRAINT party_events_type_check CHECK (event_type IN (
        'data.created', 'data.imported', 'request.granted', 'request.denied', 'request.expired', 'grant.revoked', 'grant.expired',
        'aggregate.updated', 'aggregate.stopped')),
    ADD CONSTRAINT party_events_imported_check CHECK ((event_type = 'data.imported') =
        (first_ms IS NOT NULL AND last_ms IS NOT NULL AND kinds IS NOT NULL AND keys IS NULL AND request_id IS NOT NULL));
