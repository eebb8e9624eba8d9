-- Reading an individual's samples of several types in time order (GET /api/users/data without a
-- single type) walks this index instead of sorting every block of the primary key's types.
-- One entry per block: about half a byte per heart-rate sample.
CREATE INDEX sample_blocks_individual_time_idx ON sample_blocks (individual_id, block_start);
