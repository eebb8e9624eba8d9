-- An individual changes an active grant (PATCH /api/users/requests/{id}): fewer types, a
-- narrower window, an earlier end — or, explicitly confirmed, a later one within what was asked —
-- or the subscription off (`subscribe` false: what is produced after is read by pull only). A
-- change is a history row like every other decision (status still 'granted', the new scope),
-- and its event for the organisation is 'grant.changed'.
ALTER TABLE party_events
    DROP CONSTRAINT party_events_type_check,
    ADD CONSTRAINT party_events_type_check CHECK (event_type IN (
        'data.created', 'data.imported', 'request.granted', 'request.denied', 'request.expired', 'grant.revoked', 'grant.expired',
        'grant.changed', 'aggregate.updated', 'aggregate.stopped'));

CREATE OR REPLACE FUNCTION data4help_party_event_for_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO party_events (third_party_id, request_id, individual_id, event_type)
    SELECT r.third_party_id, r.id, r.individual_id,
           CASE NEW.status
               WHEN 'granted' THEN CASE WHEN EXISTS (
                       SELECT 1 FROM access_request_history h
                       WHERE h.request_id = NEW.request_id AND h.status = 'granted' AND h.id < NEW.id)
                   THEN 'grant.changed' ELSE 'request.granted' END
               WHEN 'denied'  THEN 'request.denied'
               WHEN 'revoked' THEN 'grant.revoked'
               WHEN 'expired' THEN CASE WHEN r.granted_types IS NULL THEN 'request.expired' ELSE 'grant.expired' END
           END
    FROM access_requests r
    WHERE r.id = NEW.request_id AND NEW.status <> 'pending';
    RETURN NULL;
END
$$;
