-- Checkpoints saved as deltas (state.Delta): run_checkpoints.data keeps the
-- run's head, context the context its items follow (NULL: none stored, as
-- in a whole checkpoint of the earlier format, which data holds alone), and
-- run_checkpoint_items the run's items, one row per position, with the
-- version of the save that wrote it. A save that leaves the context as it
-- is keeps its TOAST value: the history is not rewritten.
ALTER TABLE {{schema}}.run_checkpoints ADD COLUMN context bytea;

CREATE TABLE {{schema}}.run_checkpoint_items (
	run_id  text   NOT NULL,
	seq     bigint NOT NULL,
	version bigint NOT NULL,
	data    bytea  NOT NULL,
	PRIMARY KEY (run_id, seq)
);
