package sqlite

import "strings"

// Every statement the store runs, outside its migrations, is written here
// and listed in statements with the query plan it was written for, so that
// TestStatementPlans reads the plan of each one (and a statement added
// without its plan fails TestEveryStatementIsListed). A plan may search a
// table by a whole key, or by a key's prefix only where the statement reads
// or removes every row of that prefix it visits (a limit in the index's
// order, or rows it returns or deletes): none may scan a table, nor walk
// rows it does not use, so no statement's cost grows with the history.

// lastStamp is the last write stamp of session ?1, the greatest of its
// floor in session_stamps (raised by each removal), its last item's
// stamp and the last stamp of its items behind (session_items_behind),
// each by key. The last item not behind is the last item or, when a
// removal left an item behind last, one written before the removal:
// under the floor.
const lastStamp = `max(COALESCE((SELECT stamp FROM session_stamps WHERE session_id = ?1), 0),
	COALESCE((SELECT stamp FROM session_items WHERE session_id = ?1 ORDER BY place DESC, seq DESC LIMIT 1), 0),
	COALESCE((SELECT stamp FROM session_items INDEXED BY session_items_behind
		WHERE session_id = ?1 AND behind IS NOT NULL ORDER BY stamp DESC LIMIT 1), 0))`

// nextStamp is lastStamp + 1 with its session bound three times by
// position.
const nextStamp = `max(COALESCE((SELECT stamp FROM session_stamps WHERE session_id = ?), 0),
	COALESCE((SELECT stamp FROM session_items WHERE session_id = ? ORDER BY place DESC, seq DESC LIMIT 1), 0),
	COALESCE((SELECT stamp FROM session_items INDEXED BY session_items_behind
		WHERE session_id = ? AND behind IS NOT NULL ORDER BY stamp DESC LIMIT 1), 0)) + 1`

// prevPlace and prevSeq are the place and position of the item of session
// ?1 before item x in the primary key's order (NULL for none), each
// subquery one entry by key: the item before x in its run, or the last
// of the run placed before.
const (
	prevPlace = `CASE WHEN EXISTS (SELECT 1 FROM session_items WHERE session_id = ?1 AND place = x.place AND seq < x.seq)
		THEN x.place ELSE (SELECT max(place) FROM session_items WHERE session_id = ?1 AND place < x.place) END`
	prevSeq = `coalesce((SELECT max(seq) FROM session_items WHERE session_id = ?1 AND place = x.place AND seq < x.seq),
		(SELECT max(seq) FROM session_items WHERE session_id = ?1
			AND place = (SELECT max(place) FROM session_items WHERE session_id = ?1 AND place < x.place)))`
)

// Session statements.
const (
	// An append's first statement, which writes nothing: the session's
	// next write stamp, one above its last (lastStamp), and run ?2's
	// place (NULL for a new run), by key.
	sqlTakeStamp = `SELECT ` + lastStamp + ` + 1,
		(SELECT place FROM session_runs WHERE session_id = ?1 AND run_id = ?2)`

	// The session's last place: one index entry, read backwards.
	sqlNewRun = `INSERT INTO session_runs (session_id, run_id, place)
		SELECT ?, ?, COALESCE((SELECT place FROM session_runs WHERE session_id = ?
			ORDER BY place DESC LIMIT 1), 0) + 1
		RETURNING place`

	// sqlInsertItems, then sqlInsertRow once per item (comma-separated),
	// then sqlInsertTail. The answers column of a row: for an output (its
	// batch call not NULL, bound twice) the greater of the latest call of
	// the batch with its ID before it and the latest such call stored,
	// read backwards in session_items_call_ids, whose entries hold calls
	// by their position and outputs by their call's, a call after its
	// output: the last entry below the item; NULL for every other
	// item, whose CASE does not run the lookup. INDEXED BY keeps the lookup
	// on the index it was written for: left to itself, SQLite searched the
	// primary key by (session_id, place, seq<?), walking the run backwards
	// from the item, the whole run for a call with a new ID.
	// The behind column of a row: 1 when the session holds an item at or
	// after its place and position (one entry of the primary key), else
	// NULL.
	sqlInsertItems = `INSERT INTO session_items (session_id, place, seq, kind, name, raw, call_id, stamp, answers, behind) VALUES `
	sqlInsertRow   = `(?, ?, ?, ?, ?, ?, ?, ?, CASE WHEN ? IS NULL THEN NULL ELSE max(?, COALESCE((
		SELECT c.seq FROM session_items AS c INDEXED BY session_items_call_ids
		WHERE c.session_id = ? AND c.place = ? AND c.call_id = ? AND coalesce(c.answers, c.seq) < ? AND (c.answers IS NULL)
		ORDER BY coalesce(c.answers, c.seq) DESC LIMIT 1), 0)) END,
		(SELECT 1 FROM session_items AS b WHERE b.session_id = ? AND (b.place, b.seq) >= (?, ?) LIMIT 1))`
	sqlInsertTail = ` ON CONFLICT (session_id, place, seq) DO NOTHING`

	// An append of a run that has its place, in one statement: the rows
	// of VALUES (sqlInsertJoinRow per item: seq, kind, name, raw, call
	// ID and batch call), joined to the run's row of session_runs (the
	// last two arguments), which gives their place, each with the
	// session's next write stamp, one above its last (lastStamp, its
	// session bound three times, at the head: a subquery of no row, run
	// once), the answers column as sqlInsertRow computes it, and the
	// behind column from the session's last item as it was before the
	// statement (its session bound a fourth time: one search, run once,
	// where sqlInsertRow searches for each row): the session holds an
	// item at or after a row exactly when its last item is there. The
	// batch's own rows count for neither (sqlInsertRow's subqueries, too,
	// see the table as it was before the statement): written together,
	// with one stamp, none is behind another. A run with no place yet
	// joins no row and inserts nothing: see Store.append.
	sqlInsertJoinHead = `INSERT INTO session_items (session_id, place, seq, kind, name, raw, call_id, stamp, answers, behind)
		SELECT r.session_id, r.place, v.column1, v.column2, v.column3, v.column4, v.column5,
			` + nextStamp + `,
			CASE WHEN v.column6 IS NULL THEN NULL ELSE max(v.column6, COALESCE((
				SELECT c.seq FROM session_items AS c INDEXED BY session_items_call_ids
				WHERE c.session_id = r.session_id AND c.place = r.place AND c.call_id = v.column5
					AND coalesce(c.answers, c.seq) < v.column1 AND (c.answers IS NULL)
				ORDER BY coalesce(c.answers, c.seq) DESC LIMIT 1), 0)) END,
			CASE WHEN (r.place, v.column1) <= (SELECT place, seq FROM session_items WHERE session_id = ?
				ORDER BY place DESC, seq DESC LIMIT 1) THEN 1 END
		FROM session_runs AS r, (VALUES `
	sqlInsertJoinRow  = `(?, ?, ?, ?, ?, ?)`
	sqlInsertJoinTail = `) AS v WHERE r.session_id = ? AND r.run_id = ?
		ON CONFLICT (session_id, place, seq) DO NOTHING`

	sqlStoredItem = `SELECT kind, name, raw FROM session_items WHERE session_id = ? AND place = ? AND seq = ?`

	// The last limit items (limit -1: all), read backwards in the primary
	// key's order, then put back in order.
	sqlList = `SELECT seq, kind, name, raw FROM (
		SELECT place, seq, kind, name, raw FROM session_items WHERE session_id = ?
		ORDER BY place DESC, seq DESC LIMIT ?
	) ORDER BY place, seq`

	// The last ?3 items before run ?2's place (every item when the run
	// has none) written before stamp ?4, read backwards in the primary
	// key's order from there, each with the session's last stamp (one
	// lookup by key, made once).
	sqlListBefore = `SELECT seq, kind, name, raw, ` + lastStamp + ` FROM (
		SELECT place, seq, kind, name, raw FROM session_items
		WHERE session_id = ?1 AND place < COALESCE(
			(SELECT place FROM session_runs WHERE session_id = ?1 AND run_id = ?2), 9223372036854775807)
			AND stamp < ?4
		ORDER BY place DESC, seq DESC LIMIT ?3
	) ORDER BY place ASC, seq ASC`

	sqlLookup = `SELECT i.seq, i.kind, i.name, i.raw
		FROM session_runs r JOIN session_items i ON i.session_id = r.session_id AND i.place = r.place
		WHERE r.session_id = ? AND r.run_id = ? AND i.seq = ?`

	sqlPop = `DELETE FROM session_items
		WHERE (session_id, place, seq) = (
			SELECT session_id, place, seq FROM session_items WHERE session_id = ?
			ORDER BY place DESC, seq DESC LIMIT 1)
		RETURNING seq, kind, name, raw`

	// A removal (Pop, Clear), before it removes anything, in its
	// transaction: the session's floor of stamps rises to its last stamp,
	// and its generation moves on. A session that never placed a run, and
	// has no row, gets none.
	sqlRemoval = `INSERT INTO session_stamps (session_id, stamp, gen)
		SELECT ?1, ` + lastStamp + `, 1
		WHERE EXISTS (SELECT 1 FROM session_runs WHERE session_id = ?1)
			OR EXISTS (SELECT 1 FROM session_stamps WHERE session_id = ?1)
		ON CONFLICT (session_id) DO UPDATE SET stamp = excluded.stamp, gen = gen + 1`

	// What a session gained since write stamp ?3 (session.ChangeReader):
	// a first row with the session's last stamp, its generation and run
	// ?2's place (0 for none), then the items, in no order: those behind
	// of stamp ?3 or more, from their index, and those not behind of stamp
	// ?3 or more. These are after every item of a smaller stamp in the
	// primary key's order (each was written after every item stored
	// then), so tail walks the key backwards, one entry by key a step,
	// from the session's last item to the first of a stamp below ?3:
	// O(the items written since). One statement: one snapshot.
	sqlChangesSince = `WITH RECURSIVE tail (place, seq, kind, name, raw, stamp, behind, prev_place, prev_seq) AS (
			SELECT *, ` + prevPlace + `, ` + prevSeq + ` FROM (SELECT place, seq, kind, name, raw, stamp, behind FROM session_items
				WHERE session_id = ?1 ORDER BY place DESC, seq DESC LIMIT 1) AS x
			UNION ALL
			SELECT x.place, x.seq, x.kind, x.name, x.raw, x.stamp, x.behind, ` + prevPlace + `, ` + prevSeq + `
			FROM tail AS t JOIN session_items AS x ON x.session_id = ?1 AND x.place = t.prev_place AND x.seq = t.prev_seq
			WHERE t.stamp >= ?3)
		SELECT 0, 0, '', '', X'',
			` + lastStamp + `,
			COALESCE((SELECT gen FROM session_stamps WHERE session_id = ?1), 0),
			COALESCE((SELECT place FROM session_runs WHERE session_id = ?1 AND run_id = ?2), 0)
		UNION ALL
		SELECT place, seq, kind, name, raw, 0, 0, 0 FROM session_items INDEXED BY session_items_behind
		WHERE session_id = ?1 AND behind IS NOT NULL AND stamp >= ?3
		UNION ALL
		SELECT place, seq, kind, name, raw, 0, 0, 0 FROM tail WHERE behind IS NULL AND stamp >= ?3`
	// The same first row, then the session's last ?3 items (all for -1),
	// last first, backwards along the primary key.
	sqlChangesTail = `SELECT 0, 0, '', '', X'',
			` + lastStamp + `,
			COALESCE((SELECT gen FROM session_stamps WHERE session_id = ?1), 0),
			COALESCE((SELECT place FROM session_runs WHERE session_id = ?1 AND run_id = ?2), 0)
		UNION ALL
		SELECT * FROM (SELECT place, seq, kind, name, raw, 0, 0, 0 FROM session_items
			WHERE session_id = ?1 ORDER BY place DESC, seq DESC LIMIT ?3)`

	sqlClearItems = `DELETE FROM session_items WHERE session_id = ?`
	sqlClearRuns  = `DELETE FROM session_runs WHERE session_id = ?`

	// The listing of sessions (browse.go): a session is filed when its
	// first run is placed, and leaves when it is cleared.
	sqlSessionFile   = `INSERT INTO session_index (session_id) VALUES (?) ON CONFLICT (session_id) DO NOTHING`
	sqlSessionUnfile = `DELETE FROM session_index WHERE session_id = ?`
	// Newest first, below the cursor's serial, one more than the page.
	sqlListSessions = `SELECT serial, session_id FROM session_index WHERE serial < ? ORDER BY serial DESC LIMIT ?`
	// The IDs from the prefix (?2, or after the cursor's ID ?1) up to the
	// prefix followed by the byte 0xFF, which no UTF-8 text holds, in ID
	// order, one more than the page.
	sqlSearchSessions = `SELECT serial, session_id FROM session_index
		WHERE session_id > ?1 AND session_id >= ?2 AND session_id < ?3 ORDER BY session_id LIMIT ?4`
	// A page of a session's items before a position, newest first, with
	// their runs: read backwards along the primary key, the run of each
	// item looked up by (session, place). A subquery, not a join: joined,
	// SQLite built a bloom filter over every run of the session.
	sqlPage = `SELECT (SELECT r.run_id FROM session_runs AS r WHERE r.session_id = i.session_id AND r.place = i.place),
			i.place, i.seq, i.kind, i.name, i.raw
		FROM session_items AS i
		WHERE i.session_id = ?1 AND (i.place, i.seq) < (?2, ?3)
		ORDER BY i.place DESC, i.seq DESC LIMIT ?4`
)

// insertSQL are the inserts of 1 to len(insertSQL)-1 items, written once:
// a turn appends a few items at a time.
var insertSQL = func() (qs [17]string) {
	for n := 1; n < len(qs); n++ {
		qs[n] = buildInsertSQL(n)
	}
	return qs
}()

// joinSQL are the one-statement appends (sqlInsertJoinHead) of 1 to
// len(joinSQL)-1 items, written once.
var joinSQL = func() (qs [len(insertSQL)]string) {
	for n := 1; n < len(qs); n++ {
		qs[n] = rowsSQL(sqlInsertJoinHead, sqlInsertJoinRow, sqlInsertJoinTail, n)
	}
	return qs
}()

// insertItemsSQL returns the insert of n items.
func insertItemsSQL(n int) string {
	if n < len(insertSQL) {
		return insertSQL[n]
	}
	return buildInsertSQL(n)
}

func buildInsertSQL(n int) string { return rowsSQL(sqlInsertItems, sqlInsertRow, sqlInsertTail, n) }

// rowsSQL returns head, then n times row separated by commas, then tail.
func rowsSQL(head, row, tail string, n int) string {
	var q strings.Builder
	q.Grow(len(head) + n*(len(row)+2) + len(tail))
	q.WriteString(head)
	for i := range n {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString(row)
	}
	q.WriteString(tail)
	return q.String()
}

// Checkpoint statements, prepared once per store (ckptStmts, in field
// order).
const (
	// One statement, so one consistent snapshot: the head row (part 0),
	// the context (part 1) and the items (part 2).
	sqlCkptLoad = `SELECT 0, version, 0, data FROM run_checkpoints WHERE run_id = ?1
	UNION ALL
	SELECT 1, 0, 0, data FROM run_checkpoint_contexts WHERE run_id = ?1
	UNION ALL
	SELECT 2, version, seq, data FROM run_checkpoint_items WHERE run_id = ?1`
	sqlCkptVersion = `SELECT version FROM run_checkpoints WHERE run_id = ?`
	// The head of a run's first save (based on 0): the head (run,
	// version, data) with the columns of the run's summary that every save
	// changes (agent, turn, pending approvals) and the listing's (session
	// and status), inserted where the run has no row. A row stored already
	// changes nothing: a conflict, which sqlCkptVersion then reads to
	// report. The head's triggers (migration 0013) file a new run in
	// run_index, and move a saved one's row when its session or status
	// changes (sqlCkptUpdateHead).
	sqlCkptInsertHead = `INSERT INTO run_checkpoints (run_id, version, data, agent, turn, pending, session_id, status)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO NOTHING`
	// The head of a saved run's save, written over the version the save
	// was based on (the last argument) and nowhere else: no row changed, a
	// conflict, as sqlCkptInsertHead's. One search by key: this and the
	// insert were one upsert, which searched twice (an EXISTS for a base
	// with no row, then the conflict). Parameters by position only: the
	// driver reads the name of each numbered one (?NNN) into a string of
	// its own at every bind.
	sqlCkptUpdateHead = `UPDATE run_checkpoints SET version = ?, data = ?, agent = ?, turn = ?, pending = ?,
		session_id = ?, status = ?
	WHERE run_id = ? AND version = ?`
	// The head of a saved run's save that files the run where it is filed
	// already, most saves: sqlCkptUpdateHead without the listing's
	// columns, which it finds equal instead (the last two arguments), so
	// that the trigger that refiles the run is not even started (SQLite
	// runs a trigger of UPDATE OF a column the statement sets, and only
	// then its WHEN). No row changed: the run is filed elsewhere or the
	// version is not the base, and sqlCkptUpdateHead decides which.
	sqlCkptUpdateFiled = `UPDATE run_checkpoints SET version = ?, data = ?, agent = ?, turn = ?, pending = ?
	WHERE run_id = ? AND version = ? AND session_id = ? AND status = ?`
	// sqlInsertPieces, then sqlInsertPieceRow once per piece
	// (comma-separated): a save's pieces (run, version, position, data),
	// keyed by the version of the save before their position (migration
	// 0012), so that they go after every stored one. A plain insert: a
	// save writes a position once, and a full save first removes the
	// run's pieces (sqlCkptClearItems).
	sqlInsertPieces      = `INSERT INTO run_checkpoint_items (run_id, version, seq, data) VALUES `
	sqlInsertPieceRow    = `(?, ?, ?, ?)`
	sqlCkptUpsertContext = `INSERT INTO run_checkpoint_contexts (run_id, data) VALUES (?, ?)
	ON CONFLICT (run_id) DO UPDATE SET data = excluded.data`
	sqlCkptClearItems   = `DELETE FROM run_checkpoint_items WHERE run_id = ?`
	sqlCkptClearContext = `DELETE FROM run_checkpoint_contexts WHERE run_id = ?`
	sqlCkptDeleteHead   = `DELETE FROM run_checkpoints WHERE run_id = ?`

	sqlIndexDelete = `DELETE FROM run_index WHERE run_id = ?`

	// A page of the listing: the runs numbered below the cursor, newest
	// first, one more than the page to learn whether more follow; one
	// statement per filter, each read backwards along its own index, the
	// rest of each run's summary read from its head by key (CROSS JOIN:
	// run_index first). INDEXED BY keeps a filter on its index: after
	// ANALYZE, with runs of each status alike in number, SQLite walked
	// every run backwards and skipped those of other statuses, whose
	// number has no bound.
	sqlListRuns              = `SELECT ` + indexCols + ` FROM run_index AS i CROSS JOIN run_checkpoints AS c ON c.run_id = i.run_id WHERE i.serial < ?1 ORDER BY i.serial DESC LIMIT ?2`
	sqlListRunsStatus        = `SELECT ` + indexCols + ` FROM run_index AS i INDEXED BY run_index_status CROSS JOIN run_checkpoints AS c ON c.run_id = i.run_id WHERE i.status = ?3 AND i.serial < ?1 ORDER BY i.serial DESC LIMIT ?2`
	sqlListRunsSession       = `SELECT ` + indexCols + ` FROM run_index AS i INDEXED BY run_index_session CROSS JOIN run_checkpoints AS c ON c.run_id = i.run_id WHERE i.session_id = ?4 AND i.serial < ?1 ORDER BY i.serial DESC LIMIT ?2`
	sqlListRunsSessionStatus = `SELECT ` + indexCols + ` FROM run_index AS i INDEXED BY run_index_session_status CROSS JOIN run_checkpoints AS c ON c.run_id = i.run_id WHERE i.session_id = ?4 AND i.status = ?3 AND i.serial < ?1 ORDER BY i.serial DESC LIMIT ?2`
)

// indexCols are the columns a listing reads, from run_index (i) and the
// run's head (c), in the order scanSummary scans them.
const indexCols = `i.serial, i.run_id, i.session_id, i.status, c.agent, c.turn, c.pending, c.version`

// maxPieceRows is the most pieces one insert writes: a steady save
// writes two or three (an item or two, a model call, a guardrail
// result), and a longer one (a run's first save, a full save) writes
// them in inserts of maxPieceRows.
const maxPieceRows = 4

// piecesSQL are the inserts of 1 to maxPieceRows pieces.
var piecesSQL = func() (qs [maxPieceRows + 1]string) {
	for n := 1; n < len(qs); n++ {
		qs[n] = rowsSQL(sqlInsertPieces, sqlInsertPieceRow, "", n)
	}
	return qs
}()

// ckptSQL are the texts of ckptStmts, in field order.
var ckptSQL = [...]string{sqlCkptLoad, sqlCkptVersion, sqlCkptInsertHead, sqlCkptUpdateHead, sqlCkptUpdateFiled,
	piecesSQL[1], piecesSQL[2], piecesSQL[3], piecesSQL[4], sqlCkptUpsertContext, sqlCkptClearItems, sqlCkptClearContext, sqlCkptDeleteHead,
	sqlIndexDelete, sqlListRuns, sqlListRunsStatus, sqlListRunsSession, sqlListRunsSessionStatus}

// A statement is one of the store's statements with the arguments its plan
// test binds and the plan it was written for.
type statement struct {
	name string
	sql  string
	// args are the statement's arguments for the session, run, place,
	// position and call ID of the test's data.
	args func(k planKey) []any
	// plan is the EXPLAIN QUERY PLAN the statement was written for, one
	// line per node, indented by two spaces per level, as planText
	// prints it.
	plan []string
}

// A planKey names the rows a plan test binds a statement to.
type planKey struct {
	session, run string
	place, seq   int64
	callID       string
	listBefore   int64 // a serial of the listing's index
}

// statements are every statement of the store, with their plans: see the
// top of this file.
var statements = []statement{
	{name: "new run", sql: sqlNewRun,
		args: func(k planKey) []any { return []any{k.session, k.run + "-new", k.session} },
		plan: []string{
			"SCAN CONSTANT ROW",
			"SCALAR SUBQUERY 1",
			"  SEARCH session_runs USING COVERING INDEX sqlite_autoindex_session_runs_2 (session_id=?)", // LIMIT 1, in the index's order
		}},
	{name: "take stamp", sql: sqlTakeStamp,
		args: func(k planKey) []any { return []any{k.session, k.run} },
		plan: []string{
			"SCAN CONSTANT ROW",
			"SCALAR SUBQUERY 1",
			"  SEARCH session_stamps USING PRIMARY KEY (session_id=?)",
			"SCALAR SUBQUERY 2",
			"  SEARCH session_items USING PRIMARY KEY (session_id=?)", // the last item's stamp: LIMIT 1, backwards in the key's order
			"SCALAR SUBQUERY 3",
			"  SEARCH session_items USING INDEX session_items_behind (session_id=?)", // the last stamp behind: LIMIT 1, in the index's order
			"SCALAR SUBQUERY 4",
			"  SEARCH session_runs USING PRIMARY KEY (session_id=? AND run_id=?)",
		}},
	{name: "insert items", sql: insertItemsSQL(1),
		args: func(k planKey) []any {
			return []any{k.session, k.place, k.seq + 1, "tool_output", "echo", []byte(`{}`), k.callID, int64(1 << 40),
				int64(0), int64(0), k.session, k.place, k.callID, k.seq + 1, k.session, k.place, k.seq + 1}
		},
		plan: []string{
			"SCALAR SUBQUERY 1",
			"  SEARCH c USING INDEX session_items_call_ids (session_id=? AND place=? AND call_id=? AND <expr><?)", // LIMIT 1, in the index's order
			"SCALAR SUBQUERY 2",
			"  SEARCH b USING PRIMARY KEY (session_id=? AND (place,seq)>(?,?))", // behind: the first entry at or after the row
		}},
	{name: "append", sql: joinSQL[1],
		args: func(k planKey) []any {
			return []any{k.session, k.session, k.session, k.session, k.seq + 1, "tool_output", "echo", []byte(`{}`), k.callID, int64(0), k.session, k.run}
		},
		plan: []string{
			"CO-ROUTINE v",
			"  SCAN CONSTANT ROW",
			"SEARCH r USING PRIMARY KEY (session_id=? AND run_id=?)", // the run's place
			"SCAN v",
			"SCALAR SUBQUERY 1",
			"  SEARCH session_stamps USING PRIMARY KEY (session_id=?)",
			"SCALAR SUBQUERY 2",
			"  SEARCH session_items USING PRIMARY KEY (session_id=?)", // the last item's stamp: LIMIT 1, backwards in the key's order
			"SCALAR SUBQUERY 3",
			"  SEARCH session_items USING INDEX session_items_behind (session_id=?)", // the last stamp behind: LIMIT 1, in the index's order
			"CORRELATED SCALAR SUBQUERY 4",
			"  SEARCH c USING INDEX session_items_call_ids (session_id=? AND place=? AND call_id=? AND <expr><?)", // LIMIT 1, in the index's order
			"SCALAR SUBQUERY 5",
			"  SEARCH session_items USING PRIMARY KEY (session_id=?)", // behind: the last item, once: LIMIT 1, backwards in the key's order
		}},
	{name: "append of three", sql: joinSQL[3],
		args: func(k planKey) []any {
			return []any{k.session, k.session, k.session, k.session,
				k.seq + 1, "tool_call", "echo", []byte(`{}`), k.callID, nil,
				k.seq + 2, "tool_output", "echo", []byte(`{}`), k.callID, k.seq + 1,
				k.seq + 3, "message", "", []byte(`{}`), nil, nil,
				k.session, k.run}
		},
		plan: []string{
			"SEARCH r USING PRIMARY KEY (session_id=? AND run_id=?)", // the run's place
			"SCAN 3-ROW VALUES CLAUSE",
			"SCALAR SUBQUERY 1",
			"  SEARCH session_stamps USING PRIMARY KEY (session_id=?)",
			"SCALAR SUBQUERY 2",
			"  SEARCH session_items USING PRIMARY KEY (session_id=?)", // the last item's stamp: LIMIT 1, backwards in the key's order
			"SCALAR SUBQUERY 3",
			"  SEARCH session_items USING INDEX session_items_behind (session_id=?)", // the last stamp behind: LIMIT 1, in the index's order
			"CORRELATED SCALAR SUBQUERY 4",
			"  SEARCH c USING INDEX session_items_call_ids (session_id=? AND place=? AND call_id=? AND <expr><?)", // LIMIT 1, in the index's order
			"SCALAR SUBQUERY 5",
			"  SEARCH session_items USING PRIMARY KEY (session_id=?)", // behind: the last item, once: LIMIT 1, backwards in the key's order
		}},
	{name: "stored item", sql: sqlStoredItem,
		args: func(k planKey) []any { return []any{k.session, k.place, k.seq} },
		plan: []string{"SEARCH session_items USING PRIMARY KEY (session_id=? AND place=? AND seq=?)"}},
	{name: "list", sql: sqlList,
		args: func(k planKey) []any { return []any{k.session, 20} },
		plan: []string{
			"CO-ROUTINE (subquery-1)",
			"  SEARCH session_items USING PRIMARY KEY (session_id=?)", // LIMIT, in the key's order
			"SCAN (subquery-1)",
			"USE TEMP B-TREE FOR ORDER BY", // the limit's rows
		}},
	{name: "list before", sql: sqlListBefore,
		args: func(k planKey) []any { return []any{k.session, k.run + "-after", 20, int64(1 << 40)} },
		plan: []string{
			"CO-ROUTINE (subquery-5)",
			"  SEARCH session_items USING PRIMARY KEY (session_id=? AND place<?)", // LIMIT, backwards in the key's order
			"  SCALAR SUBQUERY 4",
			"    SEARCH session_runs USING PRIMARY KEY (session_id=? AND run_id=?)",
			"SCAN (subquery-5)",
			"SCALAR SUBQUERY 1",
			"  SEARCH session_stamps USING PRIMARY KEY (session_id=?)",
			"SCALAR SUBQUERY 2",
			"  SEARCH session_items USING PRIMARY KEY (session_id=?)", // the last item's stamp: LIMIT 1, backwards in the key's order
			"SCALAR SUBQUERY 3",
			"  SEARCH session_items USING INDEX session_items_behind (session_id=?)", // the last stamp behind: LIMIT 1, in the index's order
			"USE TEMP B-TREE FOR ORDER BY",
		}},
	{name: "removal", sql: sqlRemoval,
		args: func(k planKey) []any { return []any{k.session} },
		plan: []string{
			"SCAN CONSTANT ROW",
			"SCALAR SUBQUERY 4",
			"  SEARCH session_runs USING COVERING INDEX sqlite_autoindex_session_runs_2 (session_id=?)",
			"SCALAR SUBQUERY 5",
			"  SEARCH session_stamps USING PRIMARY KEY (session_id=?)",
			"SCALAR SUBQUERY 1",
			"  SEARCH session_stamps USING PRIMARY KEY (session_id=?)",
			"SCALAR SUBQUERY 2",
			"  SEARCH session_items USING PRIMARY KEY (session_id=?)", // the last item's stamp: LIMIT 1, backwards in the key's order
			"SCALAR SUBQUERY 3",
			"  SEARCH session_items USING INDEX session_items_behind (session_id=?)", // the last stamp behind: LIMIT 1, in the index's order
		}},
	{name: "changes since", sql: sqlChangesSince,
		args: func(k planKey) []any { return []any{k.session, k.run, int64(3)} },
		plan: []string{
			"COMPOUND QUERY",
			"  LEFT-MOST SUBQUERY",
			"    SCAN CONSTANT ROW",
			"    SCALAR SUBQUERY 14",
			"      SEARCH session_stamps USING PRIMARY KEY (session_id=?)",
			"    SCALAR SUBQUERY 15",
			"      SEARCH session_items USING PRIMARY KEY (session_id=?)", // the last item's stamp: LIMIT 1, backwards in the key's order
			"    SCALAR SUBQUERY 16",
			"      SEARCH session_items USING INDEX session_items_behind (session_id=?)", // the last stamp behind: LIMIT 1, in the index's order
			"    SCALAR SUBQUERY 17",
			"      SEARCH session_stamps USING PRIMARY KEY (session_id=?)",
			"    SCALAR SUBQUERY 18",
			"      SEARCH session_runs USING PRIMARY KEY (session_id=? AND run_id=?)",
			"  UNION ALL",
			"    SEARCH session_items USING INDEX session_items_behind (session_id=? AND stamp>?)", // the items behind written since
			"  UNION ALL",
			"    CO-ROUTINE tail",
			"      SETUP", // the last item, and the place and position before it: max() by key, one entry each
			"        CO-ROUTINE x",
			"          SEARCH session_items USING PRIMARY KEY (session_id=?)", // the last item
			"        SCAN x",
			"        CORRELATED SCALAR SUBQUERY 1",
			"          SEARCH session_items USING PRIMARY KEY (session_id=? AND place=? AND seq<?)",
			"        CORRELATED SCALAR SUBQUERY 2",
			"          SEARCH session_items USING PRIMARY KEY (session_id=? AND place<?)",
			"        CORRELATED SCALAR SUBQUERY 3",
			"          SEARCH session_items USING PRIMARY KEY (session_id=? AND place=? AND seq<?)",
			"        CORRELATED SCALAR SUBQUERY 5",
			"          SEARCH session_items USING PRIMARY KEY (session_id=? AND place=?)",
			"          CORRELATED SCALAR SUBQUERY 4",
			"            SEARCH session_items USING PRIMARY KEY (session_id=? AND place<?)",
			"      RECURSIVE STEP", // while the row's stamp is ?3 or more: the item before it, and the one before that
			"        SCAN t",       // the step before's row
			"        SEARCH x USING PRIMARY KEY (session_id=? AND place=? AND seq=?)", // the item before it
			"        CORRELATED SCALAR SUBQUERY 8",
			"          SEARCH session_items USING PRIMARY KEY (session_id=? AND place=? AND seq<?)",
			"        CORRELATED SCALAR SUBQUERY 9",
			"          SEARCH session_items USING PRIMARY KEY (session_id=? AND place<?)",
			"        CORRELATED SCALAR SUBQUERY 10",
			"          SEARCH session_items USING PRIMARY KEY (session_id=? AND place=? AND seq<?)",
			"        CORRELATED SCALAR SUBQUERY 12",
			"          SEARCH session_items USING PRIMARY KEY (session_id=? AND place=?)",
			"          CORRELATED SCALAR SUBQUERY 11",
			"            SEARCH session_items USING PRIMARY KEY (session_id=? AND place<?)",
			"    SCAN tail",
		}},
	{name: "changes tail", sql: sqlChangesTail,
		args: func(k planKey) []any { return []any{k.session, k.run, 20} },
		plan: []string{
			"COMPOUND QUERY",
			"  LEFT-MOST SUBQUERY",
			"    SCAN CONSTANT ROW",
			"    SCALAR SUBQUERY 1",
			"      SEARCH session_stamps USING PRIMARY KEY (session_id=?)",
			"    SCALAR SUBQUERY 2",
			"      SEARCH session_items USING PRIMARY KEY (session_id=?)", // the last item's stamp: LIMIT 1, backwards in the key's order
			"    SCALAR SUBQUERY 3",
			"      SEARCH session_items USING INDEX session_items_behind (session_id=?)", // the last stamp behind: LIMIT 1, in the index's order
			"    SCALAR SUBQUERY 4",
			"      SEARCH session_stamps USING PRIMARY KEY (session_id=?)",
			"    SCALAR SUBQUERY 5",
			"      SEARCH session_runs USING PRIMARY KEY (session_id=? AND run_id=?)",
			"  UNION ALL",
			"    CO-ROUTINE (subquery-7)",
			"      SEARCH session_items USING PRIMARY KEY (session_id=?)", // LIMIT, backwards in the key's order
			"    SCAN (subquery-7)",
		}},
	{name: "lookup", sql: sqlLookup,
		args: func(k planKey) []any { return []any{k.session, k.run, k.seq} },
		plan: []string{
			"SEARCH r USING PRIMARY KEY (session_id=? AND run_id=?)",
			"SEARCH i USING PRIMARY KEY (session_id=? AND place=? AND seq=?)",
		}},
	{name: "pop", sql: sqlPop,
		args: func(k planKey) []any { return []any{k.session} },
		plan: []string{
			"SEARCH session_items USING PRIMARY KEY (session_id=? AND place=? AND seq=?)",
			"SCALAR SUBQUERY 1",
			"  SEARCH session_items USING PRIMARY KEY (session_id=?)", // LIMIT 1, in the key's order
		}},
	{name: "clear items", sql: sqlClearItems,
		args: func(k planKey) []any { return []any{k.session + "-none"} },
		plan: []string{"SEARCH session_items USING PRIMARY KEY (session_id=?)"}}, // deletes what it visits
	{name: "clear runs", sql: sqlClearRuns,
		args: func(k planKey) []any { return []any{k.session + "-none"} },
		plan: []string{"SEARCH session_runs USING PRIMARY KEY (session_id=?)"}}, // deletes what it visits
	{name: "file session", sql: sqlSessionFile,
		args: func(k planKey) []any { return []any{k.session} },
		plan: nil}, // an insert by key
	{name: "unfile session", sql: sqlSessionUnfile,
		args: func(k planKey) []any { return []any{k.session + "-none"} },
		plan: []string{"SEARCH session_index USING INDEX sqlite_autoindex_session_index_1 (session_id=?)"}},
	{name: "list sessions", sql: sqlListSessions,
		args: func(k planKey) []any { return []any{int64(150), 21} },
		plan: []string{"SEARCH session_index USING INTEGER PRIMARY KEY (rowid<?)"}}, // LIMIT, backwards in the key's order
	{name: "search sessions", sql: sqlSearchSessions,
		args: func(k planKey) []any { return []any{"other-1", "other-1", "other-1\xff", 21} },
		plan: []string{"SEARCH session_index USING COVERING INDEX sqlite_autoindex_session_index_1 (session_id>? AND session_id<?)"}}, // LIMIT, in the index's order
	{name: "page", sql: sqlPage,
		args: func(k planKey) []any { return []any{k.session, k.place, k.seq - 100, 51} },
		plan: []string{
			"SEARCH i USING PRIMARY KEY (session_id=? AND (place,seq)<(?,?))", // LIMIT, backwards in the key's order
			"CORRELATED SCALAR SUBQUERY 1",
			"  SEARCH r USING INDEX sqlite_autoindex_session_runs_2 (session_id=? AND place=?)",
		}},
	{name: "checkpoint load", sql: sqlCkptLoad,
		args: func(k planKey) []any { return []any{k.run} },
		plan: []string{
			"COMPOUND QUERY",
			"  LEFT-MOST SUBQUERY",
			"    SEARCH run_checkpoints USING PRIMARY KEY (run_id=?)",
			"  UNION ALL",
			"    SEARCH run_checkpoint_contexts USING INDEX sqlite_autoindex_run_checkpoint_contexts_1 (run_id=?)",
			"  UNION ALL",
			"    SEARCH run_checkpoint_items USING PRIMARY KEY (run_id=?)", // returns what it visits
		}},
	{name: "checkpoint version", sql: sqlCkptVersion,
		args: func(k planKey) []any { return []any{k.run} },
		plan: []string{"SEARCH run_checkpoints USING PRIMARY KEY (run_id=?)"}},
	{name: "checkpoint insert head", sql: sqlCkptInsertHead,
		args: func(k planKey) []any {
			return []any{k.run + "-new", int64(1), []byte(`{}`), "agent", 1, 0, k.session, 2}
		},
		plan: nil}, // an insert by key
	{name: "checkpoint update head", sql: sqlCkptUpdateHead,
		args: func(k planKey) []any {
			return []any{int64(2), []byte(`{}`), "agent", 1, 0, k.session, 2, k.run, int64(1)}
		},
		plan: []string{"SEARCH run_checkpoints USING PRIMARY KEY (run_id=?)"}},
	{name: "checkpoint update filed head", sql: sqlCkptUpdateFiled,
		args: func(k planKey) []any {
			return []any{int64(2), []byte(`{}`), "agent", 1, 0, k.run, int64(1), k.session, 2}
		},
		plan: []string{"SEARCH run_checkpoints USING PRIMARY KEY (run_id=?)"}},
	{name: "checkpoint piece", sql: piecesSQL[1],
		args: func(k planKey) []any { return []any{k.run, int64(1), int64(1), []byte(`{}`)} },
		plan: nil}, // an insert by key
	{name: "checkpoint pieces", sql: piecesSQL[maxPieceRows],
		args: func(k planKey) []any {
			var args []any
			for i := range maxPieceRows {
				args = append(args, k.run, int64(1), int64(i+1), []byte(`{}`))
			}
			return args
		},
		plan: []string{"SCAN 4-ROW VALUES CLAUSE"}}, // the rows offered, each inserted by key
	{name: "checkpoint context", sql: sqlCkptUpsertContext,
		args: func(k planKey) []any { return []any{k.run, []byte(`{}`)} },
		plan: nil},
	{name: "checkpoint clear items", sql: sqlCkptClearItems,
		args: func(k planKey) []any { return []any{k.run} },
		plan: []string{"SEARCH run_checkpoint_items USING PRIMARY KEY (run_id=?)"}}, // deletes what it visits
	{name: "checkpoint clear context", sql: sqlCkptClearContext,
		args: func(k planKey) []any { return []any{k.run} },
		plan: []string{"SEARCH run_checkpoint_contexts USING INDEX sqlite_autoindex_run_checkpoint_contexts_1 (run_id=?)"}},
	{name: "checkpoint delete head", sql: sqlCkptDeleteHead,
		args: func(k planKey) []any { return []any{k.run} },
		plan: []string{"SEARCH run_checkpoints USING PRIMARY KEY (run_id=?)"}},
	{name: "index delete", sql: sqlIndexDelete,
		args: func(k planKey) []any { return []any{k.run} },
		plan: []string{"SEARCH run_index USING INDEX sqlite_autoindex_run_index_1 (run_id=?)"}},
	{name: "list runs", sql: sqlListRuns,
		args: func(k planKey) []any { return listArgs(k) },
		plan: []string{
			"SEARCH i USING INTEGER PRIMARY KEY (rowid<?)", // LIMIT, backwards in the key's order
			"SEARCH c USING PRIMARY KEY (run_id=?)",        // each run's head, by key
		}},
	{name: "list runs by status", sql: sqlListRunsStatus,
		args: func(k planKey) []any { return listArgs(k) },
		plan: []string{
			"SEARCH i USING INDEX run_index_status (status=? AND serial<?)",
			"SEARCH c USING PRIMARY KEY (run_id=?)",
		}},
	{name: "list runs of a session", sql: sqlListRunsSession,
		args: func(k planKey) []any { return listArgs(k) },
		plan: []string{
			"SEARCH i USING INDEX run_index_session (session_id=? AND serial<?)",
			"SEARCH c USING PRIMARY KEY (run_id=?)",
		}},
	{name: "list runs of a session by status", sql: sqlListRunsSessionStatus,
		args: func(k planKey) []any { return listArgs(k) },
		plan: []string{
			"SEARCH i USING INDEX run_index_session_status (session_id=? AND status=? AND serial<?)",
			"SEARCH c USING PRIMARY KEY (run_id=?)",
		}},
}

// listArgs are the arguments of a listing's second page: below the
// cursor (?1), 21 runs (?2), paused (?3), of the test's session (?4).
func listArgs(k planKey) []any {
	return []any{k.listBefore, 21, 1, k.session}
}
