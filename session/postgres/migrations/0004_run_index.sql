-- The listing of runs (state.Lister): one row per checkpoint with its
-- summary as of its last save, numbered by its first save (serial, from a
-- sequence: never reused; an upsert that finds the row keeps its number),
-- written by the save's own statement. Each listing reads one of its
-- indexes from a cursor: every run, by status, by session, by session and
-- status. Status: 1 paused, 2 unfinished, 3 finished.
CREATE TABLE {{schema}}.run_index (
	run_id     text     NOT NULL PRIMARY KEY,
	serial     bigserial,
	session_id text     NOT NULL,
	status     smallint NOT NULL,
	agent      text     NOT NULL,
	turn       bigint   NOT NULL,
	pending    bigint   NOT NULL,
	version    bigint   NOT NULL
);
-- Every run: on -serial, not serial, so that no index on serial alone can
-- serve the filtered listings: given one, the planner walked it backwards
-- and skipped the runs of other statuses or sessions, whose number has
-- no bound, rather than read the filter's own index.
CREATE UNIQUE INDEX run_index_all ON {{schema}}.run_index ((-serial));
CREATE INDEX run_index_status ON {{schema}}.run_index (status, serial);
CREATE INDEX run_index_session ON {{schema}}.run_index (session_id, serial);
CREATE INDEX run_index_session_status ON {{schema}}.run_index (session_id, status, serial);

-- Checkpoints stored before this migration, in run ID order, summarised
-- from their heads (a head that is not JSON: an unfinished run).
DO $$
DECLARE
	c   record;
	doc jsonb;
BEGIN
	FOR c IN SELECT run_id, version, data FROM {{schema}}.run_checkpoints ORDER BY run_id LOOP
		BEGIN
			doc := convert_from(c.data, 'UTF8')::jsonb -> 'run';
		EXCEPTION WHEN others THEN
			doc := NULL;
		END;
		IF jsonb_typeof(doc) IS DISTINCT FROM 'object' THEN
			doc := '{}'::jsonb;
		END IF;
		INSERT INTO {{schema}}.run_index (run_id, session_id, status, agent, turn, pending, version)
		VALUES (c.run_id,
			COALESCE(doc ->> 'session_id', ''),
			CASE WHEN doc -> 'finished' = 'true'::jsonb THEN 3
				WHEN jsonb_typeof(doc -> 'pending') = 'array' AND jsonb_array_length(doc -> 'pending') > 0 THEN 1
				ELSE 2 END,
			COALESCE(doc ->> 'agent', ''),
			CASE WHEN jsonb_typeof(doc -> 'turn') = 'number' THEN (doc ->> 'turn')::bigint ELSE 0 END,
			CASE WHEN jsonb_typeof(doc -> 'pending') = 'array' THEN jsonb_array_length(doc -> 'pending') ELSE 0 END,
			c.version);
	END LOOP;
END
$$;
