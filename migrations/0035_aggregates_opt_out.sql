-- An individual may leave every aggregate's population (PATCH /api/users/me
-- {"aggregatesOptOut": true}): from the next query on they are not counted, whatever the
-- filter. The differential-privacy accounting stays valid — an opted-out person is simply
-- absent from the data set — and their own data, grants and uploads are untouched.
ALTER TABLE individuals ADD COLUMN aggregates_opt_out boolean NOT NULL DEFAULT false;
