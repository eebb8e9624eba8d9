-- The devices that produced an individual's samples ("Apple Watch", "Pixel 8"). Blocks refer to
-- them by a small number, so a source costs two bytes per sample rather than its name's length.
CREATE TABLE sample_sources (
    individual_id bigint   NOT NULL REFERENCES individuals (id) ON DELETE CASCADE,
    source_id     smallint NOT NULL,   -- 1, 2, ... per individual; 0 in a block means "none"
    name          text     NOT NULL,
    PRIMARY KEY (individual_id, source_id),
    CONSTRAINT sample_sources_name_key UNIQUE (individual_id, name)
);

-- Parallel to offsets_ms; NULL when no sample of the block names a source.
ALTER TABLE sample_blocks ADD COLUMN source_ids smallint[];
