-- The listing of sessions (session.Lister): one row per session, numbered
-- by its first append (serial, never reused), written when a session's
-- first run is placed and removed when it is cleared. Newest first reads
-- the primary key backwards; a search by ID prefix reads session_id's
-- index from the prefix.
CREATE TABLE session_index (
	serial     INTEGER PRIMARY KEY AUTOINCREMENT,
	session_id TEXT    NOT NULL UNIQUE
);

-- Sessions stored before this migration, in ID order.
INSERT INTO session_index (session_id)
SELECT DISTINCT session_id FROM session_runs ORDER BY session_id;
