-- The listing of runs (state.Lister): one row per checkpoint with its
-- summary as of its last save, numbered by its first save (serial, never
-- reused), written in the save's transaction. Each listing reads one of
-- its indexes backwards from a cursor: every run, by status, by session,
-- by session and status.
CREATE TABLE run_index (
	serial     INTEGER PRIMARY KEY AUTOINCREMENT,
	run_id     TEXT    NOT NULL UNIQUE,
	session_id TEXT    NOT NULL,
	status     INTEGER NOT NULL,
	agent      TEXT    NOT NULL,
	turn       INTEGER NOT NULL,
	pending    INTEGER NOT NULL,
	version    INTEGER NOT NULL
);
CREATE INDEX run_index_status ON run_index (status, serial);
CREATE INDEX run_index_session ON run_index (session_id, serial);
CREATE INDEX run_index_session_status ON run_index (session_id, status, serial);

-- Checkpoints stored before this migration, in run ID order, summarised
-- from their heads (a head that is not JSON: an unfinished run).
INSERT INTO run_index (run_id, session_id, status, agent, turn, pending, version)
SELECT run_id,
	CASE WHEN ok THEN COALESCE(json_extract(doc, '$.run.session_id'), '') ELSE '' END,
	CASE WHEN NOT ok THEN 2
		WHEN json_extract(doc, '$.run.finished') THEN 3
		WHEN COALESCE(json_array_length(doc, '$.run.pending'), 0) > 0 THEN 1
		ELSE 2 END,
	CASE WHEN ok THEN COALESCE(json_extract(doc, '$.run.agent'), '') ELSE '' END,
	CASE WHEN ok THEN COALESCE(json_extract(doc, '$.run.turn'), 0) ELSE 0 END,
	CASE WHEN ok THEN COALESCE(json_array_length(doc, '$.run.pending'), 0) ELSE 0 END,
	version
FROM (SELECT run_id, version, CAST(data AS TEXT) AS doc, json_valid(CAST(data AS TEXT)) AS ok FROM run_checkpoints)
ORDER BY run_id;
