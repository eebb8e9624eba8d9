-- A Track4Run runner who finishes gets the run as a workout: `run_id` says which run, and its
-- route is read from the run's own positions (`run_positions`), not copied.
ALTER TABLE workouts ADD COLUMN run_id bigint REFERENCES run_events (id) ON DELETE SET NULL;
