-- Write stamps (session.History): the items of each append get their session's
-- next stamp, from session_heads.stamp, whose row lock also orders the
-- appends of one session, so that stamps follow commit order. Clear keeps
-- the head (its last place back to 0), so that a session's stamps only go
-- up. A run's history reference reads "the items before my place written
-- before stamp S": an earlier run that goes on later writes after S.
ALTER TABLE {{schema}}.session_heads ADD COLUMN stamp bigint NOT NULL DEFAULT 0;
ALTER TABLE {{schema}}.session_items ADD COLUMN stamp bigint NOT NULL DEFAULT 0;

-- Items stored before this migration are stamped in the session's order,
-- and each session's counter starts after them.
UPDATE {{schema}}.session_items AS i SET stamp = n.stamp
FROM (SELECT session_id, place, seq,
		row_number() OVER (PARTITION BY session_id ORDER BY place, seq) AS stamp
	FROM {{schema}}.session_items) AS n
WHERE i.session_id = n.session_id AND i.place = n.place AND i.seq = n.seq;

UPDATE {{schema}}.session_heads AS h SET stamp = m.stamp
FROM (SELECT session_id, max(stamp) AS stamp FROM {{schema}}.session_items GROUP BY session_id) AS m
WHERE h.session_id = m.session_id;
