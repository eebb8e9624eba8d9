-- The individuals who opted out of aggregates (migration 0035), indexed on their own: a question
-- over the whole population meets its values through an anti-join to them (GroupAggregateStore),
-- whose inner side was a scan of every individual, once per parallel worker (about 3 ms each at
-- 10,000 people, ten times that at 100,000); with this index it reads the few who opted out.
-- Built in the migration's transaction: a scan of `individuals` under a lock that holds their
-- writes for about a second per million people.
CREATE INDEX individuals_aggregates_opt_out_idx ON individuals (id) WHERE aggregates_opt_out;
