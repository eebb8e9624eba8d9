-- A request from an organisation the person has blocked is withheld: stored `pending`, exactly
-- like a request naming a fiscal code nobody holds, so the organisation cannot tell a block from
-- an unknown or silent person (issue 19, finding 6). It is never shown to the person, cannot be
-- decided, announces nothing, and lapses at its expiry like any unanswered request.
ALTER TABLE access_requests ADD COLUMN withheld boolean NOT NULL DEFAULT false;
