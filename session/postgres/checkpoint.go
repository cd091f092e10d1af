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
	// The save and SaveAppend of a delta that builds on the stored
	// version (see buildsOn), a save's common case: simple statements in
	// one round trip.
	casOn, casAppendOn             string
	casPiecesOn, casAppendPiecesOn piecesStatements
	// SaveAppend's append after casAppendOn (see placedAppend).
	placedOn placedStatements
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
		// common case, is one statement, and SaveAppend's two, sent in one
		// round trip in one implicit transaction (see plainTrip), each of
		// which does all it has: not one statement with parts its
		// arguments turn off, whose executor starts every part of its plan
		// whatever they turn off (the start of the large statements'
		// plans cost more server time than the writes). SaveAppend's
		// first statement, the compare-and-swap on the head, records its
		// outcome in the transaction's setting turnkit.saved ('1' if it
		// took, see savedCond), and the append after it writes only if it
		// took.
		//
		// casOn is the compare-and-swap, the update of run $1's head from
		// version $2 to $3, with its head $4, and its context $5 if $6,
		// and the summary: $7 session, $8 status, $9 agent, $10 turn, $11
		// pending; the agent, turn and pending approvals go in the head's
		// row, and the listing's row, which the run's first save wrote,
		// takes the session and status only when they changed, which
		// they do not while a run goes on. It returns 1 if it took, 0 on a
		// conflict. casPiecesOn also writes the delta's pieces, from $12
		// on (see casStatement). casAppendOn and casAppendPiecesOn are
		// casOn and casPiecesOn for SaveAppend, which take the session's
		// shared lock (the session is their last argument) first, as an
		// append does, so that the statements after them read what was
		// committed before they hold it; they also record whether the
		// compare-and-swap took (savedCond) and have the statements after
		// them in the transaction run on generic plans (see genericPlans),
		// with no statement of their own for either. A save alone is its
		// own transaction, so casOn and casPiecesOn set neither.
		casOn:             r.Replace(casStatement(false, 0)),
		casPiecesOn:       newPiecesStatements(r, false),
		casAppendOn:       r.Replace(casStatement(true, 0)),
		casAppendPiecesOn: newPiecesStatements(r, true),
		// placedOn are SaveAppend's appends after casAppendOn, for a run
		// that has its place in the session ($1; its first SaveAppend gave
		// it one): each takes the head's next write stamp and inserts the
		// items ($2 run, then the items' columns), with no read of their
		// positions first: a save that builds on the stored version
		// appends at positions that its run's earlier commits left free.
		// Where it cannot write what it must, it fails, and the
		// transaction with it, so that the save does not take without the
		// append: a position that holds an item, the same or another,
		// fails on its key (isTaken), a second output for a call on the
		// answers' index (isDuplicateOutput), and a run with no place (a
		// Clear removed it) on the place's NOT NULL (isUnplaced); the
		// first two go to saveAppendTx, which reads the positions and
		// skips the items stored already.
		placedOn: newPlacedStatements(r, savedCond),
		version:  r.Replace(`SELECT version FROM {{schema}}.run_checkpoints WHERE run_id = $1`),
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

// savedCond holds in the statements after casAppendOn or
// casAppendPiecesOn in their transaction if the compare-and-swap took. The setting is local to the
// transaction: it ends with it, and every transaction that reads it set
// it first.
const savedCond = `current_setting('turnkit.saved', true) = '1'`

// casStatement returns ckptQueries.casOn (neither lock nor pieces),
// casPiecesOn, casAppendOn (lock) or casAppendPiecesOn (both): pieces is
// 0 for none, piecesArrays for the arrays $12 and $13 (positions and
// JSON), or the number of rows of a VALUES list of pieces (a position
// and its JSON each, from $12 on), as placedAppend takes items.
func casStatement(lock bool, pieces int) string {
	cond, with := "", ""
	if lock {
		arg := 12
		switch {
		case pieces == piecesArrays:
			arg += 2
		case pieces > 0:
			arg += 2 * pieces
		}
		with = `lk AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared(` + lockClass + `, hashtext($` + strconv.Itoa(arg) + `))),
			`
		cond = " AND EXISTS (SELECT 1 FROM lk)"
	}
	with += `ok AS (
				UPDATE {{schema}}.run_checkpoints
				SET version = $3, data = $4, context = CASE WHEN $6::boolean THEN $5 ELSE context END,
					agent = $9, turn = $10, pending = $11
				WHERE run_id = $1 AND version = $2` + cond + `
				RETURNING 1),
			idx AS (
				UPDATE {{schema}}.run_index SET session_id = $7, status = $8
				WHERE run_id = $1 AND (session_id, status) IS DISTINCT FROM ($7::text, $8::smallint)
					AND EXISTS (SELECT 1 FROM ok))`
	if pieces != 0 {
		rows := `unnest($12::bigint[], $13::bytea[])`
		if pieces > 0 {
			rows = valuesList(pieces, 12, "bigint", "bytea")
		}
		// A plain insert, not an upsert: the pieces of a delta that builds
		// on the stored version are at positions the run stored nothing at
		// since its last full save (which removed the rest), or the chain
		// of the head's digest, which covers every stored piece by its
		// version, would not hold. An upsert's speculative insertion
		// writes a second log record per row (its confirmation) and takes
		// a speculative lock; a position taken anyway fails on the key.
		with += `,
			items AS (
				INSERT INTO {{schema}}.run_checkpoint_items (run_id, seq, version, data)
				SELECT $1, c.seq, $3, c.data FROM ` + rows + ` AS c(seq, data)
				WHERE EXISTS (SELECT 1 FROM ok))`
	}
	if !lock {
		// A save alone, its own implicit transaction: no statement
		// follows it to read the settings.
		return `WITH ` + with + `
			SELECT count(*) FROM ok`
	}
	return `WITH ` + with + `
			SELECT n, set_config('turnkit.saved', n::text, true), ` + genericPlansCall + `
			FROM (SELECT count(*) AS n FROM ok) AS c`
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

func newPiecesStatements(r *strings.Replacer, lock bool) piecesStatements {
	p := piecesStatements{arrays: r.Replace(casStatement(lock, piecesArrays))}
	for n := range maxValuesRows {
		p.rows[n] = r.Replace(casStatement(lock, n+1))
	}
	return p
}

// placedAppend returns the append of a run that has its place in the
// session ($1; $2 run): the head's next write stamp and the items, with no
// read of their positions first, on condition cond (savedCond: the
// statements of ckptQueries.placedOn, after casAppendOn) or none ("":
// queries.placed's, after lockShared). What it cannot write fails it, and
// its transaction with it: a position that holds an item, the same or
// another, on its key (isTaken), a second output for a call on the
// answers' index (isDuplicateOutput), a run with no place or a session
// with no head on a NOT NULL (isUnplaced).
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
func placedAppend(cond string, paired bool, rows int) string {
	head, where := "", ""
	if cond != "" {
		head, where = " AND "+cond, "\n\t\t\tWHERE "+cond
	}
	answers := answersExpr("(SELECT place FROM r)")
	if paired {
		answers = "t.batch_call"
	}
	items := `unnest($3::bigint[], $4::text[], $5::text[], $6::bytea[], $7::bytea[], $8::bigint[])`
	if rows > 0 {
		items = valuesList(rows, 3, "bigint", "text", "text", "bytea", "bytea", "bigint")
	}
	return `WITH r AS MATERIALIZED (SELECT place FROM {{schema}}.session_runs WHERE session_id = $1 AND run_id = $2),
			head AS (
				UPDATE {{schema}}.session_heads SET stamp = stamp + 1
				WHERE session_id = $1` + head + `
				RETURNING stamp)
			INSERT INTO {{schema}}.session_items (session_id, place, seq, kind, name, raw, call_id, answers, stamp)
			SELECT $1, (SELECT place FROM r), t.seq, t.kind, t.name, t.raw, t.call_id, ` + answers + `,
				(SELECT stamp FROM head)
			FROM ` + items + `
				AS t(seq, kind, name, raw, call_id, batch_call)` + where
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

func newPlacedStatements(r *strings.Replacer, cond string) placedStatements {
	var p placedStatements
	for paired := range 2 {
		p.arrays[paired] = r.Replace(placedAppend(cond, paired == 1, 0))
		for n := range maxValuesRows {
			p.rows[paired][n] = r.Replace(placedAppend(cond, paired == 1, n+1))
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
// call and this one. If a position holds an item already, the same or
// another (a plain Append of the same run wrote it: writers through the
// checkpoint's compare-and-swap exclude each other), or the items are out
// of order, it is a transaction of Append's with the save in its first
// round trip, which skips the items stored already. A save on the stored
// version of a run whose place a Clear removed takes one more round trip:
// the statements of the common case write nothing, and the general one
// places the run again.
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
// version, with items in increasing Seq order, in one round trip: the
// save's statement (queueSaveOn) with the session's lock, then a placed
// append (placedOn), in one transaction. A position another writer took,
// or that holds another item, makes it the transaction of saveAppendTx,
// which reads what is stored; it returns an error for which isUnplaced
// holds, having written nothing, if the run has no place in the session.
func (s *Store) saveAppendOn(ctx context.Context, run *state.Run, d *state.Delta, sessionID string, items []state.Item, a appendCols) error {
	var saved int64
	// The append's arguments first, the save's after them, in one array.
	appendOn, args := s.ck.placedOn.of(a, sessionID, run.ID(), saveOnArgsLen)
	n := len(args)
	err := s.plainTrip(ctx,
		func(b *pgx.Batch) {
			s.queueSaveOn(b, d, args, args[1], args[0])
			b.Queue(appendOn, args[:n]...)
		},
		func(br pgx.BatchResults) error {
			err := readSaveOn(br, &saved)
			if _, aerr := br.Exec(); err == nil {
				err = aerr
			}
			return err
		})
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
	err := s.pipelinedTx(ctx,
		func(b *pgx.Batch) {
			b.Queue(s.q.lockShared, sessionID)
			s.queueSave(b, d)
			b.Queue(s.q.appendExisting, a.args(sessionID, run.ID())...)
		},
		func(br pgx.BatchResults) error {
			if _, err := br.Exec(); err != nil {
				return err
			}
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
// with queueSaveOn's statement; otherwise with ckptQueries.save, on the
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
		query, args := s.saveOn(d, make([]any, 0, saveOnArgsLen), d.RunID, nil)
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

// buildsOn reports whether d builds on the stored version: it is not the
// run's first save (base 0), which inserts the head and the listing's
// row, nor a full save, which removes the stored items first.
func buildsOn(d *state.Delta) bool { return d.Base > 0 && !d.Full }

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

// saveOnArgsLen is the most arguments queueSaveOn appends.
const saveOnArgsLen = 12 + 2*maxValuesRows

// queueSaveOn queues the save of d, which builds on the stored version
// (buildsOn), with one statement: casOn, or casPiecesOn if d has pieces;
// for SaveAppend, with the lock of session sid if sid is not nil,
// casAppendOn or casAppendPiecesOn. Its arguments go after args' (run is
// d.RunID), in its array if it has room (saveOnArgsLen).
func (s *Store) queueSaveOn(b *pgx.Batch, d *state.Delta, args []any, run, sid any) {
	query, args := s.saveOn(d, args, run, sid)
	b.Queue(query, args...)
}

// saveOn returns queueSaveOn's statement and its arguments (in args'
// array if it has room, after args' own).
func (s *Store) saveOn(d *state.Delta, args []any, run, sid any) (string, []any) {
	sum := &d.Summary
	n := len(args)
	// The numbers, strings and bytes go as pointers into d (see pgInt64
	// and pgText), which box with no allocation.
	args = append(args, run, (*pgInt64)(&d.Base), (*pgInt64)(&d.Version), (*pgBytes)(&d.Head), (*pgBytes)(&d.Context), d.Context != nil,
		(*pgText)(&sum.SessionID), int16(sum.Status), (*pgText)(&sum.Agent), (*pgInt)(&sum.Turn), (*pgInt)(&sum.Pending))
	query, pieces := s.ck.casOn, &s.ck.casPiecesOn
	if sid != nil {
		query, pieces = s.ck.casAppendOn, &s.ck.casAppendPiecesOn
	}
	switch k := len(d.Items); {
	case k > maxValuesRows:
		query = pieces.arrays
		seqs, data := rowcodec.Columns(d)
		args = append(args, int64s(seqs), byteas(data))
	case k > 0:
		// Each piece's position and JSON as a pointer into d.
		query = pieces.rows[k-1]
		for i := range d.Items {
			p := &d.Items[i]
			args = append(args, (*pgInt64)(&p.Seq), (*pgBytes)(&p.Data))
		}
	}
	if sid != nil {
		args = append(args, sid)
	}
	return query, args[n:len(args):len(args)]
}

// readSaveOn reads the answer of queueSaveOn's statement: whether the
// compare-and-swap took (saved: 1 or 0).
func readSaveOn(br pgx.BatchResults, saved *int64) error {
	return br.QueryRow().Scan(saved, nil, nil)
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
