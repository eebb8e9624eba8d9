-- An organisation hears of an offer made to it as it hears of everything else (issue 24):
-- 'offer.received', in its event log, so by the pull of its stream and by its webhook. The
-- event names the offer; the organisation reads it with GET /api/thirdparties/offers/{id}.
ALTER TABLE party_events
    ADD COLUMN offer_id bigint REFERENCES data_offers (id) ON DELETE CASCADE,
    DROP CONSTRAINT party_events_subject_check,
    ADD CONSTRAINT party_events_subject_check CHECK (num_nonnulls(request_id, aggregate_id, offer_id) = 1),
    DROP CONSTRAINT party_events_type_check,
    ADD CONSTRAINT party_events_type_check CHECK (event_type IN (
        'data.created', 'data.imported', 'request.granted', 'request.denied', 'request.expired', 'grant.revoked', 'grant.expired',
        'grant.changed', 'aggregate.updated', 'aggregate.stopped', 'offer.received'));
