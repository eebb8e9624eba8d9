-- Concatenation of arrays as an aggregate (PostgreSQL has array_cat, but no aggregate of it;
-- array_agg of arrays makes a two-dimensional array of equal lengths). The ingest statement joins
-- the new samples' keys of every type a grant covers into one event's keys.
CREATE AGGREGATE data4help_array_cat_agg(anycompatiblearray) (SFUNC = array_cat, STYPE = anycompatiblearray);
