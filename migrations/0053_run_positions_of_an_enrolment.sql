-- A runner's position belongs to their enrolment: one foreign key to run_participants instead of
-- one to run_events and one to individuals.
--
-- Why: every position inserted checked its event's row (`SELECT ... FOR KEY SHARE` on run_events),
-- the same row for every runner of a race. Concurrent posts' transactions then shared that lock,
-- and each new sharer made PostgreSQL write a new MultiXact of all current ones: 33 ms in the
-- foreign-key trigger for a batch of 20 positions under `bench live`'s load of 5,000 runners (its
-- EXPLAIN ANALYZE), against microseconds for the insert itself. The enrolment's row is the one the
-- same statement has just updated, whose lock its transaction holds already.
--
-- Deletes are as before: an event or an individual deleted takes their enrolments, and these take
-- the positions (ON DELETE CASCADE). A withdrawn enrolment now takes its positions too, where they
-- were left behind unseen (replay and exports read positions through the enrolment).
--
-- NOT VALID: new positions are checked, and the rows already stored are not scanned under the
-- lock this migration holds (a long lock on a table of millions of positions); positions left by
-- withdrawals are deleted instead, which takes no lock beyond their rows.
ALTER TABLE run_positions
    ADD CONSTRAINT run_positions_enrolment_fkey FOREIGN KEY (run_id, individual_id)
        REFERENCES run_participants (run_id, individual_id) ON DELETE CASCADE NOT VALID,
    DROP CONSTRAINT run_positions_run_id_fkey,
    DROP CONSTRAINT run_positions_individual_id_fkey;

DELETE FROM run_positions r
WHERE NOT EXISTS (SELECT 1 FROM run_participants p WHERE p.run_id = r.run_id AND p.individual_id = r.individual_id);
