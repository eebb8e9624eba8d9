-- Collecting ids as an aggregate that parallel workers can share (PostgreSQL 15's array_agg has
-- no combine function, so a statement using it aggregates every row in one process). The
-- grouped aggregate statement (GroupAggregateStore) collects each group's members with it: a
-- time grouping sends each person once per period, half a million ids for 10,000 people by day,
-- which both workers now collect and the leader joins. The order of the ids is not kept
-- (array_cat of the workers' parts); the members are a set.
CREATE AGGREGATE data4help_collect_ids(int8) (
    SFUNC = array_append, STYPE = int8[], INITCOND = '{}', COMBINEFUNC = array_cat, PARALLEL = SAFE
);
