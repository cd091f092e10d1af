-- Each call has at most one output (session.ErrDuplicateOutput). call_id is
-- set on calls and outputs; answers, on an output, is the position of the
-- call it answers: the latest call of the run with its ID placed before it,
-- or 0. A call is a row with a call_id and no answers.
ALTER TABLE session_items ADD COLUMN call_id TEXT;
ALTER TABLE session_items ADD COLUMN answers INTEGER;

-- Rows stored before this migration: calls and outputs get their call ID,
-- outputs the call they answer; an output that a call had already (history
-- the check would have refused) keeps neither, and is not checked.
UPDATE session_items SET call_id = json_extract(CAST(raw AS TEXT), '$.call_id')
	WHERE kind IN ('tool_call', 'handoff_call', 'tool_output', 'handoff_output');
UPDATE session_items AS o SET answers = (
		SELECT COALESCE(MAX(c.seq), 0) FROM session_items c
		WHERE c.session_id = o.session_id AND c.place = o.place AND c.call_id = o.call_id
			AND c.kind IN ('tool_call', 'handoff_call') AND c.seq < o.seq)
	WHERE o.kind IN ('tool_output', 'handoff_output') AND o.call_id IS NOT NULL;
UPDATE session_items AS o SET answers = NULL, call_id = NULL
	WHERE o.answers IS NOT NULL AND EXISTS (
		SELECT 1 FROM session_items d
		WHERE d.session_id = o.session_id AND d.place = o.place AND d.call_id = o.call_id
			AND d.answers = o.answers AND d.seq < o.seq);

-- The calls of a run by ID, in order: the latest one before an output.
CREATE INDEX session_items_calls ON session_items (session_id, place, call_id, seq)
	WHERE call_id IS NOT NULL AND answers IS NULL;

-- One output per call.
CREATE UNIQUE INDEX session_items_answers ON session_items (session_id, place, call_id, answers)
	WHERE answers IS NOT NULL;
