-- The index of write stamps keeps only the items written behind the
-- session's last item: one page fewer written per append in the common
-- case, an append after every item of its session.
--
-- An item is behind when its session held an item at or after its place
-- and position when it was written (behind = 1; NULL otherwise): an
-- earlier run that goes on after a later one started, a position filled
-- late. The other items, each after every item stored when it was
-- written, are in the primary key's order what they are in the stamps'
-- order, and after every item of a smaller stamp: a session's items
-- written since stamp S are its items behind with a stamp of S or more,
-- from session_items_behind, and the items not behind among those from
-- its last back to the first below S.
ALTER TABLE session_items ADD COLUMN behind INTEGER;

-- Items stored before this migration are behind where an item after them
-- has a smaller stamp: the others are in the stamps' order.
UPDATE session_items AS i SET behind = 1
FROM (SELECT session_id, place, seq, stamp,
		min(stamp) OVER (PARTITION BY session_id ORDER BY place DESC, seq DESC
			ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS after
	FROM session_items) AS w
WHERE i.session_id = w.session_id AND i.place = w.place AND i.seq = w.seq AND w.after < w.stamp;

DROP INDEX session_items_stamps;
CREATE INDEX session_items_behind ON session_items (session_id, stamp) WHERE behind IS NOT NULL;
