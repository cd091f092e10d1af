-- {{schema}} is replaced by the quoted schema name (WithSchema).

-- Each call has at most one output (session.ErrDuplicateOutput). call_id is
-- set on calls and outputs; answers, on an output, is the position of the
-- call it answers: the latest call of the run with its ID placed before it,
-- or 0. A call is a row with a call_id and no answers. call_id is bytea, as
-- raw is: a call ID may hold any character, NUL too.
ALTER TABLE {{schema}}.session_items ADD COLUMN call_id bytea, ADD COLUMN answers bigint;

-- Rows stored before this migration: calls and outputs get their call ID,
-- outputs the call they answer; an output that a call had already (history
-- the check would have refused) keeps neither, and is not checked; so is a
-- row whose JSON holds an escaped NUL, which PostgreSQL cannot read as text.
UPDATE {{schema}}.session_items SET call_id = convert_to(convert_from(raw, 'UTF8')::json ->> 'call_id', 'UTF8')
	WHERE kind IN ('tool_call', 'handoff_call', 'tool_output', 'handoff_output')
		AND position('\x5c7530303030'::bytea IN raw) = 0; -- the bytes of \u0000
UPDATE {{schema}}.session_items AS o SET answers = (
		SELECT COALESCE(max(c.seq), 0) FROM {{schema}}.session_items c
		WHERE c.session_id = o.session_id AND c.place = o.place AND c.call_id = o.call_id
			AND c.kind IN ('tool_call', 'handoff_call') AND c.seq < o.seq)
	WHERE o.kind IN ('tool_output', 'handoff_output') AND o.call_id IS NOT NULL;
UPDATE {{schema}}.session_items AS o SET answers = NULL, call_id = NULL
	WHERE o.answers IS NOT NULL AND EXISTS (
		SELECT 1 FROM {{schema}}.session_items d
		WHERE d.session_id = o.session_id AND d.place = o.place AND d.call_id = o.call_id
			AND d.answers = o.answers AND d.seq < o.seq);

-- The calls of a run by ID, in order: the latest one before an output.
CREATE INDEX session_items_calls ON {{schema}}.session_items (session_id, place, call_id, seq)
	WHERE call_id IS NOT NULL AND answers IS NULL;

-- One output per call.
CREATE UNIQUE INDEX session_items_answers ON {{schema}}.session_items (session_id, place, call_id, answers)
	WHERE answers IS NOT NULL;
