-- The privacy record (issue 24): for each released aggregate answer, the individuals it
-- included — those in at least one of its released groups (a suppressed group released nothing
-- about anyone). Written in the transaction that stores the answer; an individual reads their
-- own rows (the primary key serves "my answers"), and nothing here is ever shown to anyone else.
-- Refused answers release nothing and have no rows. Exact figures are still never stored: a row
-- says only "this person counted in that answer".
CREATE TABLE aggregate_population (
    individual_id bigint NOT NULL REFERENCES individuals (id) ON DELETE CASCADE,
    query_id      bigint NOT NULL REFERENCES aggregate_queries (id) ON DELETE CASCADE,
    PRIMARY KEY (individual_id, query_id)
);
-- Removing an answer (its party's erasure) finds its rows.
CREATE INDEX aggregate_population_query_idx ON aggregate_population (query_id);
