-- The head's row carries what the listing files a run under, its session
-- and status, and triggers keep run_index's row in step with it, so that
-- a save runs one statement for its head and its listing where it ran
-- two: the head's upsert, then the listing's (which wrote nothing unless
-- the session or status changed, but cost a statement a save). A new head
-- files its run (the next serial, or the row already there updated); an
-- update of the head that changes the session or the status moves the
-- run's row, which keeps its serial (a row missing is filed anew); one
-- that changes neither writes no page of run_index. An upsert turned
-- into an update fires the update trigger only, and one the version
-- check refused fires none.
ALTER TABLE run_checkpoints ADD COLUMN session_id TEXT NOT NULL DEFAULT '';
ALTER TABLE run_checkpoints ADD COLUMN status INTEGER NOT NULL DEFAULT 0;

UPDATE run_checkpoints AS c SET session_id = i.session_id, status = i.status
FROM run_index AS i WHERE i.run_id = c.run_id;

CREATE TRIGGER run_checkpoints_filed AFTER INSERT ON run_checkpoints BEGIN
	INSERT INTO run_index (run_id, session_id, status) VALUES (new.run_id, new.session_id, new.status)
	ON CONFLICT (run_id) DO UPDATE SET session_id = excluded.session_id, status = excluded.status;
END;

CREATE TRIGGER run_checkpoints_refiled AFTER UPDATE OF session_id, status ON run_checkpoints
WHEN new.session_id IS NOT old.session_id OR new.status IS NOT old.status BEGIN
	INSERT INTO run_index (run_id, session_id, status) VALUES (new.run_id, new.session_id, new.status)
	ON CONFLICT (run_id) DO UPDATE SET session_id = excluded.session_id, status = excluded.status;
END;
