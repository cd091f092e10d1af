-- The columns of a run's summary that every save changes (its agent,
-- turn and pending approvals, and its version, which run_checkpoints
-- holds already) move to the head's row, which every save writes: a
-- save of a run whose session and status stay as they were writes no
-- page of run_index, of its three indexes nor of sqlite_sequence (an
-- upsert of run_index took a new serial before it found the run's row),
-- where it wrote all six. run_index keeps what a listing filters and
-- orders by, and a listing reads the rest from each run's head, by key.
ALTER TABLE run_checkpoints ADD COLUMN agent TEXT NOT NULL DEFAULT '';
ALTER TABLE run_checkpoints ADD COLUMN turn INTEGER NOT NULL DEFAULT 0;
ALTER TABLE run_checkpoints ADD COLUMN pending INTEGER NOT NULL DEFAULT 0;

UPDATE run_checkpoints AS c SET agent = i.agent, turn = i.turn, pending = i.pending
FROM run_index AS i WHERE i.run_id = c.run_id;

ALTER TABLE run_index DROP COLUMN agent;
ALTER TABLE run_index DROP COLUMN turn;
ALTER TABLE run_index DROP COLUMN pending;
ALTER TABLE run_index DROP COLUMN version;
