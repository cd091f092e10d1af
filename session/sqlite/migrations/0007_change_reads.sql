-- Reads of what a session gained since a write stamp (session.ChangeReader):
-- the items by (session, stamp), and the session's generation, which Pop
-- and Clear move on, so that a cache of its items learns of a removal.
ALTER TABLE session_stamps ADD COLUMN gen INTEGER NOT NULL DEFAULT 0;

CREATE INDEX session_items_stamps ON session_items (session_id, stamp);
