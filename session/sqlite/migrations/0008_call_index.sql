-- One index for calls and outputs instead of two, so that an append of a
-- call and its output writes one index page where it wrote two.
--
-- session_items_call_ids holds a run's calls and outputs by call ID and
-- the position of the call: a call's own (answers NULL), an output's the
-- call's it answers (answers). A call and its output are neighbours
-- (answers IS NULL orders them), where the call's position alone would
-- have put every call of one ID before every output of it. Unique: an
-- output is (call, position, false), so a call has one output, as under
-- session_items_answers, and calls of one ID, at different positions,
-- repeat freely. The latest call of an ID before a position is the last
-- entry below it, or the one before that (the call's output).
DROP INDEX session_items_calls;
DROP INDEX session_items_answers;
CREATE UNIQUE INDEX session_items_call_ids
	ON session_items (session_id, place, call_id, coalesce(answers, seq), answers IS NULL)
	WHERE call_id IS NOT NULL;
