-- The privacy record's index (migration 0038) takes each answer's members into its pending list,
-- and PopulationIndexMerger moves the list into the index once the answers of a busy moment have
-- gathered (merging costs each distinct member once, however many pending answers name them).
-- At the default 4 MB the list filled within about sixteen answers of 10,000 people, or two of
-- 100,000, and the insert that found it full merged it while its own answer waited. 16 MB holds a
-- few seconds of answers at the rate one instance answers them. Catalogue only.
ALTER INDEX aggregate_populations_members_idx SET (gin_pending_list_limit = 16384);
