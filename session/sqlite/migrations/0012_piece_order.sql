-- A run's checkpoint pieces are keyed by the version of the save that
-- wrote them before their position: (run_id, version, seq). Keyed by
-- (run_id, seq), a save's pieces landed at both ends of the run's rows,
-- its items (positions above zero) at the right and its model calls
-- (below -2^40, one lower at each call) at the left, and its guardrail
-- results (-1, -2, …) in between, so every save wrote a leaf at each end
-- and, as the run grew, split leaves at both: 5.77 pages per crash-safe
-- tool turn over a 64-turn run. Versions only grow within a run, so now
-- every save's pieces go after every piece stored before them, at the
-- right edge of the run's rows. A piece's position stays unique within a
-- run (a save writes a position once, and a full save first removes every
-- piece of the run), and a load reads the run's rows in any order.
CREATE TABLE run_checkpoint_pieces (
	run_id  TEXT    NOT NULL,
	version INTEGER NOT NULL,
	seq     INTEGER NOT NULL,
	data    BLOB    NOT NULL,
	PRIMARY KEY (run_id, version, seq)
) WITHOUT ROWID;

INSERT INTO run_checkpoint_pieces (run_id, version, seq, data)
SELECT run_id, version, seq, data FROM run_checkpoint_items;

DROP TABLE run_checkpoint_items;
ALTER TABLE run_checkpoint_pieces RENAME TO run_checkpoint_items;
