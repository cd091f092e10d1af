package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/internal/rowcodec"
	"github.com/turnkit/turnkit/state"
)

var (
	_ state.Store  = (*Store)(nil)
	_ state.Lister = (*Store)(nil)
)

// A checkpoint is stored as deltas (see [state.Delta]): its head in
// run_checkpoints.data, its context in run_checkpoints.context (replaced
// only when it changes), and its items in run_checkpoint_items, one row per
// position. A save writes the head and what changed since the last save, so
// its cost does not grow with the run's history. A whole checkpoint of the
// earlier format is a head row alone, with a NULL context.
//
// The pieces stay keyed by (run_id, seq), though a save's model calls (at
// descending negative positions) go to the left end of the run's index
// entries and its items to the right. The SQLite store keys them by run,
// version and position (its migration 0012) because its log holds whole
// pages, two per save at two ends; PostgreSQL logs an index entry as a
// record of its own, the same size at either end. Keyed by (run_id,
// version, seq), each entry is 8 bytes longer: a crash-safe tool turn
// logged 3 064 bytes instead of 3 040 (median of 64 turns at h=10), and
// over 600 turns 3 213 bytes against 3 208 on average alone, 3 304
// against 3 253 with another run's entries after the run's (more splits
// of fuller leaves). What the older key costs is a second dirty leaf once
// a run's entries outgrow one (about 100 turns): 1.87 leaves of the index
// a turn against 1.03 over 600 turns, whose full-page images, written at
// the first change after each of the server's checkpoints, come to 12 488
// bytes against 6 374. That is one image per long run and checkpoint,
// cheaper than 24 bytes at every turn of every run while a run makes
// fewer than some 250 turns between two checkpoints.

// ckptQueries are the checkpoint statements with the schema name resolved.
type ckptQueries struct {
	load, save, saveAppend, version, delete string
	// The save of a delta that builds on the stored version (see
	// buildsOn), a save's common case, without pieces and with them.
	casOn       string
	casPiecesOn piecesStatements
	// SaveAppend's commit of such a delta, by whether its items are
	// paired, its pieces and its items (see commitStatement).
	commitOn commitStatements
	// The listing's (list.go), one per filter.
	listAll, listStatus, listSession, listSessionStatus string
}

func newCkptQueries(schemaName string) ckptQueries {
	r := strings.NewReplacer("{{schema}}", pgx.Identifier{schemaName}.Sanitize())
	return ckptQueries{
		// One statement, one snapshot: the head row (part 0), then the
		// item rows (part 1).
		load: r.Replace(`SELECT 0, version, 0::bigint, data, context FROM {{schema}}.run_checkpoints WHERE run_id = $1
			UNION ALL
			SELECT 1, version, seq, data, NULL FROM {{schema}}.run_checkpoint_items WHERE run_id = $1`),
		// The whole save in one statement: the compare-and-swap on the
		// head (an insert when the base is 0, an update of the row at the
		// base version otherwise), and, only if it took, the removal of
		// the items a full save replaces and the upsert of the delta's
		// items. It returns 1 if the save took, 0 on a conflict.
		// The summary's agent, turn and pending approvals go in the head's
		// row; the listing's row of the run (run_index), which keeps the
		// number of its first save, is written with the run's session and
		// status only when they change (listedChanged).
		// $1 run, $2 base, $3 version, $4 head, $5 context, $6 replace the
		// context, $7 full, $8 item positions, $9 item JSON; the summary:
		// $10 session, $11 status, $12 agent, $13 turn, $14 pending.
		save: r.Replace(`WITH ins AS (
				INSERT INTO {{schema}}.run_checkpoints (run_id, version, data, context, agent, turn, pending)
				SELECT $1, $3, $4, $5, $12, $13, $14 WHERE $2::bigint = 0
				ON CONFLICT (run_id) DO NOTHING
				RETURNING 1),
			upd AS (
				UPDATE {{schema}}.run_checkpoints
				SET version = $3, data = $4, context = CASE WHEN $6::boolean THEN $5 ELSE context END,
					agent = $12, turn = $13, pending = $14
				WHERE run_id = $1 AND version = $2 AND $2::bigint > 0
				RETURNING 1),
			ok AS (SELECT 1 FROM ins UNION ALL SELECT 1 FROM upd),
			del AS (
				DELETE FROM {{schema}}.run_checkpoint_items
				WHERE $7::boolean AND run_id = $1 AND seq <> ALL($8::bigint[]) AND EXISTS (SELECT 1 FROM ok)),
			items AS (
				INSERT INTO {{schema}}.run_checkpoint_items (run_id, seq, version, data)
				SELECT $1, t.seq, $3, t.data FROM unnest($8::bigint[], $9::bytea[]) AS t(seq, data)
				WHERE EXISTS (SELECT 1 FROM ok)
				ON CONFLICT (run_id, seq) DO UPDATE SET version = EXCLUDED.version, data = EXCLUDED.data),
			idx AS (
				INSERT INTO {{schema}}.run_index (run_id, session_id, status)
				SELECT $1, $10, $11 WHERE EXISTS (SELECT 1 FROM ok)
				ON CONFLICT (run_id) DO UPDATE SET session_id = EXCLUDED.session_id, status = EXCLUDED.status
				WHERE ` + listedChanged + `)
			SELECT count(*) FROM ok`),
		// SaveAppend's common case in one statement: the save above and
		// appendOne's append, on one condition, so that both take or
		// neither does: no position holds another item (see appendReads),
		// and the save's compare-and-swap took. It returns whether the save
		// took (1 or 0), and the first position that holds another item, or
		// 0 (then neither took).
		// $1 session, $2 run, $3–$8 the items' columns (appendCols.args),
		// $9 base, $10 version, $11 head, $12 context, $13 replace the
		// context, $14 full, $15 checkpoint item positions, $16 their JSON;
		// the listing's row, as the save writes it: $17 session, $18 status,
		// $19 agent, $20 turn, $21 pending.
		saveAppend: r.Replace(`WITH ` + appendReads + `,
			fits AS MATERIALIZED (SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM stored WHERE NOT same)),
			ins AS (
				INSERT INTO {{schema}}.run_checkpoints (run_id, version, data, context, agent, turn, pending)
				SELECT $2, $10, $11, $12, $19, $20, $21 FROM fits WHERE $9::bigint = 0
				ON CONFLICT (run_id) DO NOTHING
				RETURNING 1),
			upd AS (
				UPDATE {{schema}}.run_checkpoints
				SET version = $10, data = $11, context = CASE WHEN $13::boolean THEN $12 ELSE context END,
					agent = $19, turn = $20, pending = $21
				WHERE run_id = $2 AND version = $9 AND $9::bigint > 0 AND EXISTS (SELECT 1 FROM fits)
				RETURNING 1),
			ok AS MATERIALIZED (SELECT 1 FROM ins UNION ALL SELECT 1 FROM upd),
			del AS (
				DELETE FROM {{schema}}.run_checkpoint_items
				WHERE $14::boolean AND run_id = $2 AND seq <> ALL($15::bigint[]) AND EXISTS (SELECT 1 FROM ok)),
			items AS (
				INSERT INTO {{schema}}.run_checkpoint_items (run_id, seq, version, data)
				SELECT $2, c.seq, $10, c.data FROM unnest($15::bigint[], $16::bytea[]) AS c(seq, data)
				WHERE EXISTS (SELECT 1 FROM ok)
				ON CONFLICT (run_id, seq) DO UPDATE SET version = EXCLUDED.version, data = EXCLUDED.data),
			idx AS (
				INSERT INTO {{schema}}.run_index (run_id, session_id, status)
				SELECT $2, $17, $18 WHERE EXISTS (SELECT 1 FROM ok)
				ON CONFLICT (run_id) DO UPDATE SET session_id = EXCLUDED.session_id, status = EXCLUDED.status
				WHERE ` + listedChanged + `),
			` + appendWrites + `
			SELECT (SELECT count(*) FROM ok), ` + appendDiffers + `, 1`),
		// A save that builds on the stored version (see buildsOn), the
		// common case, is one statement that does all it has: not one
		// statement with parts its arguments turn off, whose executor
		// starts every part of its plan whatever they turn off (the start
		// of the large statements' plans cost more server time than the
		// writes).
		//
		// casOn is the compare-and-swap, the update of run $1's head from
		// version $2 to $3, with its head $4, and its context $5 if $6,
		// and the summary's agent $7, turn $8 and pending approvals $9,
		// which go in the head's row; the listing's row, filed under the
		// run's session and status, stays as it is (see buildsOn). It
		// returns 1 if it took, 0 on a conflict. casPiecesOn also writes
		// the delta's pieces, from $10 on (see casStatement). commitOn is
		// SaveAppend's: casOn or casPiecesOn and the append, in one
		// statement (commitStatement).
		casOn:       r.Replace(casStatement(0)),
		casPiecesOn: newPiecesStatements(r),
		commitOn:    newCommitStatements(r),
		version:     r.Replace(`SELECT version FROM {{schema}}.run_checkpoints WHERE run_id = $1`),
		delete: r.Replace(`WITH items AS (DELETE FROM {{schema}}.run_checkpoint_items WHERE run_id = $1),
			idx AS (DELETE FROM {{schema}}.run_index WHERE run_id = $1)
			DELETE FROM {{schema}}.run_checkpoints WHERE run_id = $1`),
		// A page of the listing: the runs numbered below the cursor ($1),
		// newest first, one more than the page ($2) to learn whether more
		// follow; each reads its own index (see the migration
		// 0004_run_index.sql). $3 the status or session, $4 the session
		// after a status.
		listAll: r.Replace(`SELECT ` + indexCols + ` FROM ` + listed + `
			WHERE -i.serial > -$1::bigint ORDER BY -i.serial LIMIT $2`),
		listStatus: r.Replace(`SELECT ` + indexCols + ` FROM ` + listed + `
			WHERE i.status = $3 AND i.serial < $1 ORDER BY i.serial DESC LIMIT $2`),
		listSession: r.Replace(`SELECT ` + indexCols + ` FROM ` + listed + `
			WHERE i.session_id = $3 AND i.serial < $1 ORDER BY i.serial DESC LIMIT $2`),
		listSessionStatus: r.Replace(`SELECT ` + indexCols + ` FROM ` + listed + `
			WHERE i.status = $3 AND i.session_id = $4 AND i.serial < $1 ORDER BY i.serial DESC LIMIT $2`),
	}
}

// listedChanged holds in the upsert of a run's listing row (run_index)
// when the row's session or status differ from the save's: the row, which
// keeps only what a listing filters and orders by, is written only then
// (see the migration 0008_run_summary.sql), not at every save.
const listedChanged = `(run_index.session_id, run_index.status) IS DISTINCT FROM (EXCLUDED.session_id, EXCLUDED.status)`

// casStatement returns ckptQueries.casOn (no pieces) or a statement of
// casPiecesOn: pieces is 0 for none, piecesArrays for the arrays $10 and
// $11 (positions and JSON), or the number of rows of a VALUES list of
// pieces (a position and its JSON each, from $10 on), as placedAppend
// takes items. A save alone is its own implicit transaction.
func casStatement(pieces int) string {
	return `WITH ` + casParts(pieces) + `
			SELECT count(*) FROM ok`
}

// casParts are the CTEs of casStatement: the compare-and-swap (ok) and
// the pieces (items). The listing's row is not among them: the statements
// serve the deltas that leave it as it is (buildsOn).
func casParts(pieces int) string {
	parts := `ok AS (
				UPDATE {{schema}}.run_checkpoints
				SET version = $3, data = $4, context = CASE WHEN $6::boolean THEN $5 ELSE context END,
					agent = $7, turn = $8, pending = $9
				WHERE run_id = $1 AND version = $2
				RETURNING 1)`
	if pieces != 0 {
		rows := `unnest($10::bigint[], $11::bytea[])`
		if pieces > 0 {
			rows = valuesList(pieces, 10, "bigint", "bytea")
		}
		// A plain insert, not an upsert: the pieces of a delta that builds
		// on the stored version are at positions the run stored nothing at
		// since its last full save (which removed the rest), or the chain
		// of the head's digest, which covers every stored piece by its
		// version, would not hold. An upsert's speculative insertion
		// writes a second log record per row (its confirmation) and takes
		// a speculative lock; a position taken anyway fails on the key.
		parts += `,
			items AS (
				INSERT INTO {{schema}}.run_checkpoint_items (run_id, seq, version, data)
				SELECT $1, c.seq, $3, c.data FROM ` + rows + ` AS c(seq, data)
				WHERE EXISTS (SELECT 1 FROM ok))`
	}
	return parts
}

// piecesArgCount is the number of arguments of a delta's pieces in
// casStatement, as pieces names them.
func piecesArgCount(pieces int) int {
	switch {
	case pieces == piecesArrays:
		return 2
	case pieces > 0:
		return 2 * pieces
	}
	return 0
}

// piecesArrays is casStatement's pieces for the pieces as arrays.
const piecesArrays = -1

// piecesStatements are a compare-and-swap's statements that write a
// delta's pieces (casStatement), by their number: rows[n-1] for up to
// maxValuesRows pieces, as rows of a VALUES list, arrays for any number.
type piecesStatements struct {
	arrays string
	rows   [maxValuesRows]string
}

func newPiecesStatements(r *strings.Replacer) piecesStatements {
	p := piecesStatements{arrays: r.Replace(casStatement(piecesArrays))}
	for n := range maxValuesRows {
		p.rows[n] = r.Replace(casStatement(n + 1))
	}
	return p
}

// commitStatements are SaveAppend's commits of a delta that builds on the
// stored version (commitStatement): s[paired][pieces][items], paired 1
// for items that appendCols.paired holds for; pieces 0 for none, n for n
// rows up to maxValuesRows, maxValuesRows+1 for arrays; items n-1 for n
// rows, maxValuesRows for arrays.
type commitStatements struct {
	s [2][maxValuesRows + 2][maxValuesRows + 1]string
}

func newCommitStatements(r *strings.Replacer) commitStatements {
	var c commitStatements
	for paired := range 2 {
		for k := range maxValuesRows + 2 {
			pieces := k
			if k == maxValuesRows+1 {
				pieces = piecesArrays
			}
			for n := range maxValuesRows + 1 {
				rows := n + 1
				if n == maxValuesRows {
					rows = 0
				}
				c.s[paired][k][n] = r.Replace(commitStatement(paired == 1, pieces, rows))
			}
		}
	}
	return c
}

// of returns the statement of the commit of d with a's items.
func (c *commitStatements) of(d *state.Delta, a appendCols) string {
	paired, k, n := 0, len(d.Items), len(a.seqs)-1
	if a.paired() {
		paired = 1
	}
	if k > maxValuesRows {
		k = maxValuesRows + 1
	}
	if n >= maxValuesRows {
		n = maxValuesRows
	}
	return c.s[paired][k][n]
}

// commitStatement returns a statement of ckptQueries.commitOn: SaveAppend's
// commit of a delta that builds on the stored version, for a run that has
// its place in the session (its first SaveAppend gave it one), in one
// statement, its own implicit transaction: casStatement's parts (the
// delta's pieces as pieces says) and the append, which takes the
// session head's next write stamp and inserts the items with no read of
// their positions first (a save that builds on the stored version
// appends at positions that its run's earlier commits left free), if the
// compare-and-swap took. Its arguments are casStatement's, then the
// session ($S, after the pieces'), then the items, as rows rows of six
// arguments (appendCols' columns) or, if rows is 0, as six arrays. It
// returns 1 if it took, 0 on a conflict (then nothing was written).
//
// Where it cannot write what it must, it fails, and so writes nothing: a
// position that holds an item, the same or another, fails on its key
// (isTaken), a second output for a call on the answers' index
// (isDuplicateOutput), and a run with no place (a Clear removed it), on
// the place's NOT NULL, or a session whose generation moved (below), on
// the stamp's (isUnplaced); the first two go to saveAppendTx, which reads
// the positions and skips the items stored already, the last to
// SaveAppend's general statement.
//
// It takes no lock on the session: a Clear is ordered with it by the
// session head's row, which both update, Clear first of all it does. A
// Clear that updated the row first makes the commit wait for it and then
// update the row as the Clear left it; the commit's reads, though, are of
// the snapshot it took when it started, in which the run's place may be
// one the Clear removed. So the head's update also compares the row's
// generation, which a Clear moves, with the one the snapshot read (g):
// PostgreSQL checks an updated row's conditions again on its new version
// (with the rows of g as they were read), and a moved generation leaves
// the append no stamp. A commit that updated the row first makes the
// Clear wait for it, and the Clear's deletes, statements after its
// update, see what it wrote (TestClearDuringCommit).
func commitStatement(paired bool, pieces, rows int) string {
	sessionArg := 10 + piecesArgCount(pieces)
	sess := "$" + strconv.Itoa(sessionArg)
	answers := answersExpr(sess, "(SELECT place FROM r)")
	if paired {
		answers = "t.batch_call"
	}
	items := unnestItems(sessionArg + 1)
	if rows > 0 {
		items = valuesList(rows, sessionArg+1, "bigint", "text", "text", "bytea", "bytea", "bigint")
	}
	return `WITH g AS MATERIALIZED (SELECT gen FROM {{schema}}.session_heads WHERE session_id = ` + sess + `::text),
			` + casParts(pieces) + `,
			r AS MATERIALIZED (SELECT place FROM {{schema}}.session_runs WHERE session_id = ` + sess + ` AND run_id = $1),
			head AS (
				UPDATE {{schema}}.session_heads AS h SET stamp = h.stamp + 1 FROM g
				WHERE h.session_id = ` + sess + ` AND h.gen = g.gen AND EXISTS (SELECT 1 FROM ok)
				RETURNING h.stamp),
			app AS (
				INSERT INTO {{schema}}.session_items (session_id, place, seq, kind, name, raw, call_id, answers, stamp)
				SELECT ` + sess + `, (SELECT place FROM r), t.seq, t.kind, t.name, t.raw, t.call_id, ` + answers + `,
					(SELECT stamp FROM head)
				FROM ` + items + ` AS t(seq, kind, name, raw, call_id, batch_call)
				WHERE EXISTS (SELECT 1 FROM ok))
			SELECT count(*) FROM ok`
}

// unnestItems returns the items of an append as six arrays from $first
// on: positions, kinds, names, JSON, call IDs and the batch's calls.
func unnestItems(first int) string {
	a := func(i int, typ string) string { return "$" + strconv.Itoa(first+i) + "::" + typ + "[]" }
	return "unnest(" + a(0, "bigint") + ", " + a(1, "text") + ", " + a(2, "text") + ", " +
		a(3, "bytea") + ", " + a(4, "bytea") + ", " + a(5, "bigint") + ")"
}

// placedAppend returns the append of a run that has its place in the
// session ($1; $2 run), after lockShared (queries.placed): the head's
// next write stamp and the items, with no read of their positions first.
// What it cannot write fails it, and its transaction with it: a position
// that holds an item, the same or another, on its key (isTaken), a second
// output for a call on the answers' index (isDuplicateOutput), a run with
// no place or a session with no head on a NOT NULL (isUnplaced).
//
// paired is the statement for items that appendCols.paired holds for:
// each output answers the call of the batch its batch_call names, with no
// lookup of the calls stored. The statement with the lookup costs more
// even where its rows skip it: its plan holds the subquery on
// session_items_calls (122 µs against 143 a commit of three items in
// BenchmarkAppend, one round trip each).
//
// rows > 0 takes the items as that many rows of a VALUES list, six
// arguments each from $3 on (appendCols.rowArgs); rows = 0 as the arrays
// $3–$8 (appendCols.args), for any number of items (see maxValuesRows).
func placedAppend(paired bool, rows int) string {
	answers := answersExpr("$1", "(SELECT place FROM r)")
	if paired {
		answers = "t.batch_call"
	}
	items := unnestItems(3)
	if rows > 0 {
		items = valuesList(rows, 3, "bigint", "text", "text", "bytea", "bytea", "bigint")
	}
	return `WITH r AS MATERIALIZED (SELECT place FROM {{schema}}.session_runs WHERE session_id = $1 AND run_id = $2),
			head AS (
				UPDATE {{schema}}.session_heads SET stamp = stamp + 1
				WHERE session_id = $1
				RETURNING stamp)
			INSERT INTO {{schema}}.session_items (session_id, place, seq, kind, name, raw, call_id, answers, stamp)
			SELECT $1, (SELECT place FROM r), t.seq, t.kind, t.name, t.raw, t.call_id, ` + answers + `,
				(SELECT stamp FROM head)
			FROM ` + items + `
				AS t(seq, kind, name, raw, call_id, batch_call)`
}

// valuesList returns a parenthesized VALUES list of rows rows of
// len(types) arguments each, numbered from first on: "(VALUES ($3::bigint,
// $4::text), ($5, $6))". The first row's casts give the columns their
// types.
func valuesList(rows, first int, types ...string) string {
	var b strings.Builder
	b.WriteString("(VALUES ")
	for i := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(")
		for j, t := range types {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("$" + strconv.Itoa(first+i*len(types)+j))
			if i == 0 {
				b.WriteString("::" + t)
			}
		}
		b.WriteString(")")
	}
	b.WriteString(")")
	return b.String()
}

// maxValuesRows is the most items a placed append sends as rows of a
// VALUES list, with a statement for each count; more go as arrays. Rows
// cost the server less than arrays to read, and pgx less to encode (a
// commit of three items in BenchmarkAppend: 119 µs and 52 allocations
// against 137 µs and 65, the medians of 15 rounds of 300 commits
// interleaved); a tool turn's commit is its calls and their outputs, two
// items a call.
const maxValuesRows = 4

// valuesRowArgs is the number of arguments of an item's row.
const valuesRowArgs = 6

// placedStatements are the statements of a placed append (placedAppend)
// on one condition, by whether the items are paired and by their number:
// rows[paired][n-1] for up to maxValuesRows items, arrays[paired] for any
// number.
type placedStatements struct {
	arrays [2]string
	rows   [2][maxValuesRows]string
}

func newPlacedStatements(r *strings.Replacer) placedStatements {
	var p placedStatements
	for paired := range 2 {
		p.arrays[paired] = r.Replace(placedAppend(paired == 1, 0))
		for n := range maxValuesRows {
			p.rows[paired][n] = r.Replace(placedAppend(paired == 1, n+1))
		}
	}
	return p
}

// of returns the statement of a's placed append among p, and its
// arguments in an array with room for more after them.
func (p *placedStatements) of(a appendCols, sessionID, runID string, more int) (string, []any) {
	paired := 0
	if a.paired() {
		paired = 1
	}
	if n := len(a.seqs); n > 0 && n <= maxValuesRows {
		return p.rows[paired][n-1], a.rowArgs(sessionID, runID, more)
	}
	return p.arrays[paired], a.argsRoom(sessionID, runID, more)
}

// Load returns the run's checkpoint, a new [state.Run] with its stored
// version set, or a [*state.StoreError] wrapping [state.ErrNotFound]. It
// reads the head, the context and the items in one statement, one
// snapshot, and reassembles them with [state.Assemble]; a checkpoint whose
// rows were edited, removed or added behind the store's back fails with
// [state.ErrTampered] when the store verifies signatures (see
// [WithCodec]), with [state.ErrInvalid] otherwise.
//
// A checkpoint that refers to the session history its run started from
// ([state.Run.HistoryRef]) gets it from the store's own sessions
// with one more read ([Store.ListBefore]), so the run comes back whole;
// if the session no longer holds that history the run's history stays
// pending, and resuming it fails with [state.ErrHistoryChanged].
func (s *Store) Load(ctx context.Context, runID string) (*state.Run, error) {
	if err := s.gate.BeginRun(ctx, "load", runID); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, s.ck.load, runID)
	if err != nil {
		return nil, s.gate.WrapRun(ctx, "load", runID, err)
	}
	var (
		found         bool
		version       int64
		head, context []byte
		items         []state.Piece
		part          int
		v, seq        int64
		data, cx      []byte
	)
	_, err = pgx.ForEachRow(rows, []any{&part, &v, &seq, &data, &cx}, func() error {
		if part == 0 {
			found, version, head, context = true, v, data, cx
		} else {
			items = append(items, state.Piece{Seq: seq, Version: v, Data: data})
		}
		data, cx = nil, nil // the next row scans into new buffers
		return nil
	})
	if err != nil {
		return nil, s.gate.WrapRun(ctx, "load", runID, err)
	}
	if !found {
		return nil, &state.StoreError{Op: "load", RunID: runID, Err: state.ErrNotFound}
	}
	run, err := s.codec.Assemble(runID, version, head, context, items)
	if err != nil {
		return nil, err
	}
	if err := rowcodec.ResolveHistory(ctx, s, run); err != nil {
		return nil, err
	}
	return run, nil
}

// Save writes what changed in run since it was last loaded or saved (see
// [state.Run.Delta]) if the stored version equals run.Version() (0: none
// stored), with one statement (one round trip), and then sets run's
// version to the new one. Otherwise it returns a [*state.StoreError]
// wrapping [state.ErrConflict] and changes nothing: of two workers saving
// the same version, exactly one wins. A save writes the run's head and one
// row per item recorded since the last save, whatever the history.
func (s *Store) Save(ctx context.Context, run *state.Run) error {
	d, err := s.codec.Delta(run)
	if err != nil {
		return err
	}
	if err := s.gate.BeginRun(ctx, "save", run.ID()); err != nil {
		return err
	}
	ok, err := s.saveDelta(ctx, d)
	if err != nil {
		return s.gate.WrapRun(ctx, "save", run.ID(), err)
	}
	if !ok {
		return s.conflict(ctx, d)
	}
	runcore.Saved(run, d)
	return nil
}

// SaveAppend saves run as [Store.Save] does and appends items of run to the
// session as [Store.Append] does, in one transaction: both or neither. A
// checkpoint conflict appends nothing; an append that fails (a different
// item stored at a position, [session.ErrConflict], or any error) leaves
// the checkpoint as it was. run's version moves on only after the commit.
// The append is idempotent, as Append's is; a retry of a call that
// committed although its caller saw an error fails with
// [state.ErrConflict], as any save of an outdated version does. With no
// items it is Save, and sessionID is not used; otherwise the arguments are
// checked as Append checks them ([session.ErrInvalid]), before anything is
// written.
//
// Items in increasing Seq order (as the persistence middleware appends
// them) are saved and appended in one round trip, as one transaction: a
// crash-safe tool turn then makes two round trips, the save before its
// call and this one, each one statement. If a position holds an item
// already, the same or another (a plain Append of the same run wrote it:
// writers through the checkpoint's compare-and-swap exclude each other),
// or the items are out of order, it is a transaction of Append's with the
// save in its first round trip, which skips the items stored already. A
// save on the stored version of a run whose place a Clear removed, or in
// a session that a Clear or a Pop changed while the save ran, takes one
// more round trip: the statement of the common case writes nothing, and
// the general one, after the session's lock, places the run again.
func (s *Store) SaveAppend(ctx context.Context, run *state.Run, sessionID string, items []state.Item) error {
	if len(items) == 0 {
		return s.Save(ctx, run)
	}
	d, err := s.codec.Delta(run)
	if err != nil {
		return err
	}
	if err := s.gate.BeginRun(ctx, "save", run.ID()); err != nil {
		return err
	}
	if err := rowcodec.Validate(pkg, sessionID, run.ID(), items); err != nil {
		return err
	}
	a, err := s.newAppendCols(ctx, sessionID, run.ID(), items)
	if err != nil {
		return s.gate.WrapRun(ctx, "save", run.ID(), err)
	}
	if !increasing(a.seqs) {
		return s.saveAppendTx(ctx, run, d, sessionID, items, a)
	}
	if buildsOn(d) {
		err := s.saveAppendOn(ctx, run, d, sessionID, items, a)
		if !isUnplaced(err) {
			return err
		}
		// The run has no place in the session (a Clear removed it), which
		// saveAppendOn does not give: nothing was written.
	}
	// The statement's answer: whether the save took, the first position
	// that holds another item, and a third column this path does not
	// use (one array, one allocation, for the three that Scan's pointers
	// move to the heap).
	var answer [3]int64
	saved, differs := &answer[0], &answer[1]
	err = s.plainTrip(ctx,
		func(b *pgx.Batch) {
			b.Queue(s.q.lockShared, sessionID)
			b.Queue(s.ck.saveAppend, saveArgs(a.argsRoom(sessionID, run.ID(), saveArgsLen), d)...)
		},
		func(br pgx.BatchResults) error {
			if _, err := br.Exec(); err != nil {
				return err
			}
			return br.QueryRow().Scan(saved, differs, &answer[2])
		})
	switch {
	case err == nil && *differs != 0:
		// Nothing was written. A stale checkpoint is the first error, as
		// it is when the save runs first.
		var stored int64
		err := s.pool.QueryRow(ctx, s.ck.version, d.RunID).Scan(&stored)
		if (err == nil || errors.Is(err, pgx.ErrNoRows)) && stored != d.Base {
			return rowcodec.VersionConflict(d.RunID, d.Base, stored)
		}
		return s.differs(ctx, sessionID, run.ID(), items, a.seqs, *differs)
	case err == nil && *saved != 1:
		return s.conflict(ctx, d)
	case isDuplicateOutput(err):
		return rowcodec.DuplicateOutput(pkg, sessionID, run.ID(), items)
	case isTaken(err):
		return s.saveAppendTx(ctx, run, d, sessionID, items, a)
	case err != nil:
		return s.gate.WrapRun(ctx, "save", run.ID(), err)
	}
	runcore.Saved(run, d)
	return nil
}

// saveAppendOn is SaveAppend for a delta that builds on the stored
// version, with items in increasing Seq order, in one round trip: one
// statement of ckptQueries.commitOn. A position another writer took, or
// that holds another item, makes it the transaction of saveAppendTx,
// which reads what is stored; it returns an error for which isUnplaced
// holds, having written nothing, if the run has no place in the session
// or a Clear or Pop moved the session's generation while it ran.
func (s *Store) saveAppendOn(ctx context.Context, run *state.Run, d *state.Delta, sessionID string, items []state.Item, a appendCols) error {
	args := saveOnArgs(d, make([]any, 0, saveOnArgsLen+1+a.itemArgsLen()))
	args = a.itemArgs(append(args, sessionID))
	var saved int64
	err := s.pool.QueryRow(ctx, s.ck.commitOn.of(d, a), args...).Scan(&saved)
	switch {
	case err == nil && saved != 1:
		return s.conflict(ctx, d)
	case isTaken(err), isDuplicateOutput(err):
		// A position holds an item (the same one, or another), or an
		// output answers its call already: the transaction that reads the
		// positions tells which.
		return s.saveAppendTx(ctx, run, d, sessionID, items, a)
	case isUnplaced(err):
		return err
	case err != nil:
		return s.gate.WrapRun(ctx, "save", run.ID(), err)
	}
	runcore.Saved(run, d)
	return nil
}

// saveAppendTx is SaveAppend as a transaction of Append's with the save
// in its first round trip: two round trips or more, which read what
// another writer committed while it ran.
func (s *Store) saveAppendTx(ctx context.Context, run *state.Run, d *state.Delta, sessionID string, items []state.Item, a appendCols) error {
	errConflict := errors.New("conflict")
	var (
		n        int64
		place    *int64
		inserted int64
		appErr   error
	)
	// BEGIN, the checkpoint save and the append's first statement go in one
	// round trip; if the save lost, the transaction rolls the append back.
	err := s.pipelinedTx(ctx, sessionID,
		func(b *pgx.Batch) {
			s.queueSave(b, d)
			b.Queue(s.q.appendExisting, a.args(sessionID, run.ID())...)
		},
		func(br pgx.BatchResults) error {
			if err := br.QueryRow().Scan(&n); err != nil {
				return fmt.Errorf("save checkpoint: %w", err)
			}
			if n != 1 {
				return errConflict
			}
			appErr = br.QueryRow().Scan(&place, &inserted)
			return nil
		},
		func(tx txConn) error {
			return s.appendRest(ctx, tx, sessionID, run.ID(), items, a, place, inserted, appErr)
		})
	switch {
	case errors.Is(err, errConflict):
		return s.conflict(ctx, d)
	case errors.Is(err, session.ErrConflict), errors.Is(err, session.ErrInvalid):
		return err // says what and where
	case err != nil:
		return s.gate.WrapRun(ctx, "save", run.ID(), err)
	}
	runcore.Saved(run, d)
	return nil
}

// saveDelta applies d in one round trip and reports whether the
// compare-and-swap took: for a delta that builds on the stored version,
// with saveOn's statement; otherwise with ckptQueries.save, on the
// generic plan (see genericPlans: a custom plan,
// which the planner keeps choosing for it, is planned again at every call
// and costs more than the save itself).
func (s *Store) saveDelta(ctx context.Context, d *state.Delta) (bool, error) {
	var (
		n   int64
		err error
	)
	if buildsOn(d) {
		// One statement, its own implicit transaction: sent alone, not as a
		// batch, whose pipeline bookkeeping costs allocations for nothing.
		query, args := s.saveOn(d, make([]any, 0, saveOnArgsLen))
		err = s.pool.QueryRow(ctx, query, args...).Scan(&n)
	} else {
		err = s.oneTrip(ctx,
			func(b *pgx.Batch) { s.queueSave(b, d) },
			func(br pgx.BatchResults) error { return br.QueryRow().Scan(&n) })
	}
	if err != nil {
		return false, fmt.Errorf("save checkpoint: %w", err)
	}
	return n == 1, nil
}

// queueSave queues the save of d with one statement, ckptQueries.save,
// whatever its base.
func (s *Store) queueSave(b *pgx.Batch, d *state.Delta) {
	args := make([]any, 1, 1+saveArgsLen)
	args[0] = d.RunID
	b.Queue(s.ck.save, saveArgs(args, d)...)
}

// saveArgsLen is the number of arguments saveArgs appends.
const saveArgsLen = 13

// buildsOn reports whether d builds on the stored version and leaves the
// listing's row as it is: it is not the run's first save (base 0), which
// inserts the head and the listing's row, nor a full save, which removes
// the stored items first, and the run's session and status are those its
// base filed it under (state.Delta.Filed), as they are while a run goes
// on. The saves that change them, a run's pause, resume and end, take the
// general statements, which file it again.
func buildsOn(d *state.Delta) bool { return d.Base > 0 && !d.Full && d.Filed }

// saveArgs appends to args (the statement's arguments before the save's)
// the arguments of the save of d, with its items' positions and JSON, as
// ckptQueries.save and saveAppend take them.
func saveArgs(args []any, d *state.Delta) []any {
	seqs, data := rowcodec.Columns(d)
	sum := &d.Summary
	// The numbers, strings and bytes go as pointers into d (see pgInt64
	// and pgText), which box with no allocation.
	return append(args, (*pgInt64)(&d.Base), (*pgInt64)(&d.Version), (*pgBytes)(&d.Head), (*pgBytes)(&d.Context), d.Full || d.Context != nil, d.Full,
		int64s(seqs), byteas(data), (*pgText)(&sum.SessionID), int16(sum.Status), (*pgText)(&sum.Agent), (*pgInt)(&sum.Turn), (*pgInt)(&sum.Pending))
}

// saveOnArgsLen is the most arguments saveOnArgs appends.
const saveOnArgsLen = 9 + 2*maxValuesRows

// saveOn returns the statement of the save of d, which builds on the
// stored version (buildsOn): casOn, or casPiecesOn's for d's pieces; and
// its arguments (saveOnArgs), in args' array if it has room, after args'
// own.
func (s *Store) saveOn(d *state.Delta, args []any) (string, []any) {
	n := len(args)
	query := s.ck.casOn
	switch k := len(d.Items); {
	case k > maxValuesRows:
		query = s.ck.casPiecesOn.arrays
	case k > 0:
		query = s.ck.casPiecesOn.rows[k-1]
	}
	args = saveOnArgs(d, args)
	return query, args[n:len(args):len(args)]
}

// saveOnArgs appends to args the arguments of casStatement for d, its
// pieces as the statement for their number takes them: up to
// maxValuesRows as rows, more as two arrays.
func saveOnArgs(d *state.Delta, args []any) []any {
	sum := &d.Summary
	// The numbers, strings and bytes go as pointers into d (see pgInt64
	// and pgText), which box with no allocation.
	args = append(args, (*pgText)(&d.RunID), (*pgInt64)(&d.Base), (*pgInt64)(&d.Version), (*pgBytes)(&d.Head), (*pgBytes)(&d.Context), d.Context != nil,
		(*pgText)(&sum.Agent), (*pgInt)(&sum.Turn), (*pgInt)(&sum.Pending))
	switch k := len(d.Items); {
	case k > maxValuesRows:
		seqs, data := rowcodec.Columns(d)
		args = append(args, int64s(seqs), byteas(data))
	case k > 0:
		// Each piece's position and JSON as a pointer into d.
		for i := range d.Items {
			p := &d.Items[i]
			args = append(args, (*pgInt64)(&p.Seq), (*pgBytes)(&p.Data))
		}
	}
	return args
}

// conflict returns the conflict error of a save of d that did not take,
// with the version stored now (it may have moved on since).
func (s *Store) conflict(ctx context.Context, d *state.Delta) error {
	var stored int64
	_ = s.pool.QueryRow(ctx, s.ck.version, d.RunID).Scan(&stored) // for the message only
	return rowcodec.VersionConflict(d.RunID, d.Base, stored)
}

// Delete removes the run's checkpoint, its head, context and items, in one
// statement; deleting a missing one is not an error.
func (s *Store) Delete(ctx context.Context, runID string) error {
	if err := s.gate.BeginRun(ctx, "delete", runID); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, s.ck.delete, runID)
	return s.gate.WrapRun(ctx, "delete", runID, err)
}
