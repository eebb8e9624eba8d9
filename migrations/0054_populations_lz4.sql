-- An answer's population (migration 0038: about 80 KB for 10,000 people) compressed with lz4
-- rather than PostgreSQL's default pglz: storing one took 13–15 ms of pglz against 3 ms with lz4
-- (`psql`, 10,000 ids, without the index), in the answer's transaction, and the figure grows with
-- the people. lz4 keeps about half the bytes (40 KB against pglz's 32 KB). Catalogue only: the
-- rows already stored keep pglz and are read as before; new values are compressed with lz4.
-- Needs a PostgreSQL built with lz4 (Debian's is).
ALTER TABLE aggregate_populations ALTER COLUMN members SET COMPRESSION lz4;
