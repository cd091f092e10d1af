-- Checkpoints saved as deltas (state.Delta): run_checkpoints.data keeps the
-- run's head, run_checkpoint_contexts the context its items follow (no row:
-- none stored, as in a whole checkpoint of the earlier format, which data
-- holds alone), and run_checkpoint_items the run's items, one row per
-- position, with the version of the save that wrote it.
--
-- The context has a table of its own rather than a column beside the head:
-- SQLite rewrites a whole row, overflow pages included, whenever one of its
-- columns changes, so every save would rewrite the session history.

CREATE TABLE run_checkpoint_items (
	run_id  TEXT    NOT NULL,
	seq     INTEGER NOT NULL,
	version INTEGER NOT NULL,
	data    BLOB    NOT NULL,
	PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

CREATE TABLE run_checkpoint_contexts (
	run_id TEXT NOT NULL PRIMARY KEY,
	data   BLOB NOT NULL
);
