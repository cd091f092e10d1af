-- Sessions: a run's place in its session is fixed at its first append.
CREATE TABLE session_runs (
	session_id TEXT    NOT NULL,
	run_id     TEXT    NOT NULL,
	place      INTEGER NOT NULL,
	PRIMARY KEY (session_id, run_id),
	UNIQUE (session_id, place)
) WITHOUT ROWID;

-- Items, ordered by (place, seq); raw is the canonical Responses-API JSON.
CREATE TABLE session_items (
	session_id TEXT    NOT NULL,
	place      INTEGER NOT NULL,
	seq        INTEGER NOT NULL,
	kind       TEXT    NOT NULL,
	name       TEXT    NOT NULL,
	raw        BLOB    NOT NULL,
	PRIMARY KEY (session_id, place, seq)
) WITHOUT ROWID;

-- Checkpoints of runs (state.Store), compare-and-swap on version.
CREATE TABLE run_checkpoints (
	run_id  TEXT    NOT NULL PRIMARY KEY,
	version INTEGER NOT NULL,
	data    BLOB    NOT NULL
) WITHOUT ROWID;
