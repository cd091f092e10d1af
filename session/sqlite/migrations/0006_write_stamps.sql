-- Write stamps (session.History): the items of each append get their session's
-- next stamp, from session_stamps, whose row a session's first append
-- makes and Clear keeps, so that a session's stamps only go up. A run's
-- history reference reads "the items before my place written before stamp
-- S": an earlier run that goes on later writes after S.
CREATE TABLE session_stamps (
	session_id TEXT    NOT NULL PRIMARY KEY,
	stamp      INTEGER NOT NULL
) WITHOUT ROWID;

ALTER TABLE session_items ADD COLUMN stamp INTEGER NOT NULL DEFAULT 0;

-- Items stored before this migration are stamped in the session's order,
-- and each session's counter starts after them.
UPDATE session_items AS i SET stamp = n.stamp
FROM (SELECT session_id, place, seq,
		row_number() OVER (PARTITION BY session_id ORDER BY place, seq) AS stamp
	FROM session_items) AS n
WHERE i.session_id = n.session_id AND i.place = n.place AND i.seq = n.seq;

INSERT INTO session_stamps (session_id, stamp)
SELECT session_id, max(stamp) FROM session_items GROUP BY session_id;
