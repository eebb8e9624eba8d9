-- The privacy record (issue 24): for each released aggregate answer, the individuals it
-- included — those in at least one of its released groups (a suppressed group released nothing
-- about anyone). Written in the transaction that stores the answer, as one row per answer: the
-- members' internal ids, sorted, in one array (a row per person and answer cost 110 ms an answer
-- of 10,000 people in `bench aggregates`; one array costs a few). A GIN index answers "the answers
-- that counted me". Refused answers release nothing and have no row. Exact figures are still
-- never stored: a member only "counted in that answer". An erased person's id is removed from
-- every array (IndividualStore.delete).
CREATE TABLE aggregate_populations (
    query_id bigint PRIMARY KEY REFERENCES aggregate_queries (id) ON DELETE CASCADE,
    members  int8[] NOT NULL
);
CREATE INDEX aggregate_populations_members_idx ON aggregate_populations USING gin (members);
