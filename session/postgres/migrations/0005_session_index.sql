-- The listing of sessions (session.Lister): one row per session, numbered
-- by its first append (serial, from a sequence), written when a session's
-- first run is placed and removed when it is cleared. Newest first reads
-- the serial's index backwards; a search by ID prefix reads the primary
-- key from the prefix, in byte order (COLLATE "C"), so that a prefix is a
-- range.
CREATE TABLE {{schema}}.session_index (
	session_id text COLLATE "C" NOT NULL PRIMARY KEY,
	serial     bigserial NOT NULL UNIQUE
);

-- A session's page of items names the run of each item: a lookup by
-- (session, place). The place comes first: an index that began with the
-- session drew the planner's generic plan of the run's place lookup
-- (session, run ID) onto it, to walk the session's runs.
CREATE UNIQUE INDEX session_runs_place ON {{schema}}.session_runs (place, session_id);

-- Sessions stored before this migration, in ID order.
INSERT INTO {{schema}}.session_index (session_id)
SELECT session_id FROM {{schema}}.session_heads ORDER BY session_id;
