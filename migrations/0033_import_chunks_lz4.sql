-- The uploaded files' chunks compressed with LZ4 rather than PostgreSQL's default pglz: an
-- export.xml compresses about as well with either, and LZ4 is several times faster — with pglz
-- compressing each 1 MiB chunk was the largest part of storing an upload (bench import).
ALTER TABLE import_chunks ALTER COLUMN bytes SET COMPRESSION lz4;
