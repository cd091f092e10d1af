-- {{schema}} is replaced by the quoted schema name (WithSchema).

-- Reads of what a session gained since a write stamp (session.ChangeReader):
-- the items by (session, stamp), and the session's generation in its head,
-- which Pop and Clear move on, so that a cache of its items learns of a
-- removal.
ALTER TABLE {{schema}}.session_heads ADD COLUMN gen bigint NOT NULL DEFAULT 0;

CREATE INDEX session_items_stamps ON {{schema}}.session_items (session_id, stamp);
