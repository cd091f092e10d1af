-- {{schema}} is replaced by the quoted schema name (WithSchema).

-- The columns of a run's summary that every save changes (its agent, turn
-- and pending approvals, and its version, which run_checkpoints holds
-- already) move to the head's row, which every save writes: a save of a
-- run whose session and status stay as they were then writes no new
-- version of its run_index row, where every save rewrote it. run_index
-- keeps what a listing filters and orders by, and a listing reads the
-- rest from each run's head, by key.
--
-- The head's table is built again, for the order of its columns: the
-- write-ahead log record of an update leaves out the longest prefix and
-- suffix the new row shares with the old one, and a save changes the
-- version, the head and the turn but seldom the context, so the context
-- comes last and the summary before the head (columns added to the end
-- would have put the turn after the context, and logged the context at
-- every save).
ALTER TABLE {{schema}}.run_checkpoints RENAME TO run_checkpoints_0007;
ALTER INDEX {{schema}}.run_checkpoints_pkey RENAME TO run_checkpoints_0007_pkey;

CREATE TABLE {{schema}}.run_checkpoints (
	run_id  text   NOT NULL PRIMARY KEY,
	agent   text   NOT NULL DEFAULT '',
	pending bigint NOT NULL DEFAULT 0,
	turn    bigint NOT NULL DEFAULT 0,
	version bigint NOT NULL,
	data    bytea  NOT NULL,
	context bytea
);

INSERT INTO {{schema}}.run_checkpoints (run_id, agent, pending, turn, version, data, context)
SELECT c.run_id, COALESCE(i.agent, ''), COALESCE(i.pending, 0), COALESCE(i.turn, 0), c.version, c.data, c.context
FROM {{schema}}.run_checkpoints_0007 AS c LEFT JOIN {{schema}}.run_index AS i ON i.run_id = c.run_id;

DROP TABLE {{schema}}.run_checkpoints_0007;

ALTER TABLE {{schema}}.run_index
	DROP COLUMN agent,
	DROP COLUMN turn,
	DROP COLUMN pending,
	DROP COLUMN version;
