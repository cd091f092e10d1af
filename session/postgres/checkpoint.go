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

// ckptQueries are the checkpoint statements with the schema name resolved.
type ckptQueries struct {
	load, save, saveAppend, version, delete string
	// The save and SaveAppend of a delta that builds on the stored
	// version (see buildsOn): a save's common case.
	saveOn, saveAppendOn string
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
		// With it, the listing's row of the run (run_index), which keeps
		// the number of its first save.
		// $1 run, $2 base, $3 version, $4 head, $5 context, $6 replace the
		// context, $7 full, $8 item positions, $9 item JSON; the summary:
		// $10 session, $11 status, $12 agent, $13 turn, $14 pending.
		save: r.Replace(`WITH ins AS (
				INSERT INTO {{schema}}.run_checkpoints (run_id, version, data, context)
				SELECT $1, $3, $4, $5 WHERE $2::bigint = 0
				ON CONFLICT (run_id) DO NOTHING
				RETURNING 1),
			upd AS (
				UPDATE {{schema}}.run_checkpoints
				SET version = $3, data = $4, context = CASE WHEN $6::boolean THEN $5 ELSE context END
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
				INSERT INTO {{schema}}.run_index (run_id, session_id, status, agent, turn, pending, version)
				SELECT $1, $10, $11, $12, $13, $14, $3 WHERE EXISTS (SELECT 1 FROM ok)
				ON CONFLICT (run_id) DO UPDATE SET session_id = EXCLUDED.session_id, status = EXCLUDED.status,
					agent = EXCLUDED.agent, turn = EXCLUDED.turn, pending = EXCLUDED.pending, version = EXCLUDED.version)
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
				INSERT INTO {{schema}}.run_checkpoints (run_id, version, data, context)
				SELECT $2, $10, $11, $12 FROM fits WHERE $9::bigint = 0
				ON CONFLICT (run_id) DO NOTHING
				RETURNING 1),
			upd AS (
				UPDATE {{schema}}.run_checkpoints
				SET version = $10, data = $11, context = CASE WHEN $13::boolean THEN $12 ELSE context END
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
				INSERT INTO {{schema}}.run_index (run_id, session_id, status, agent, turn, pending, version)
				SELECT $2, $17, $18, $19, $20, $21, $10 WHERE EXISTS (SELECT 1 FROM ok)
				ON CONFLICT (run_id) DO UPDATE SET session_id = EXCLUDED.session_id, status = EXCLUDED.status,
					agent = EXCLUDED.agent, turn = EXCLUDED.turn, pending = EXCLUDED.pending, version = EXCLUDED.version),
			` + appendWrites + `
			SELECT (SELECT count(*) FROM ok), ` + appendDiffers + `, 1`),
		// save for a delta that builds on the stored version: only the
		// update of the head (a base of 0 inserts it), no removal of items
		// (a full save's), and the listing's row updated, not upserted (the
		// run's first save wrote it). The executor starts every part of a
		// statement's plan, whether its arguments turn it off or not (the
		// start of the saves' plans was a fifth of the server's CPU in a
		// crash-safe tool turn), and an upsert's insert takes the next
		// serial and locks the row it then updates.
		// $1 run, $2 base, $3 version, $4 head, $5 context, $6 replace the
		// context, $7 item positions, $8 item JSON; the summary: $9
		// session, $10 status, $11 agent, $12 turn, $13 pending.
		saveOn: r.Replace(`WITH ok AS (` + updateHead("$1", "$2", "$3", "$4", "$5", "$6", "") + `),
			` + upsertPieces("$1", "$3", "$7", "$8") + `,
			` + updateIndex("$1", "$3", "$9") + `
			SELECT count(*) FROM ok`),
		// saveAppend for a delta that builds on the stored version, as
		// saveOn is to save, and for a run that has its place in the
		// session (its first SaveAppend, with its first save, gave it
		// one): the head's next write stamp is an update, and no new run
		// is placed nor listed. A run with no place (rh: a Clear removed
		// it) writes nothing and returns 0 as its last column; SaveAppend
		// then runs saveAppend. $1–$8 as saveAppend's, $9 base, $10
		// version, $11 head, $12 context, $13 replace the context, $14
		// checkpoint item positions, $15 their JSON; the listing's row:
		// $16 session, $17 status, $18 agent, $19 turn, $20 pending.
		saveAppendOn: r.Replace(`WITH ` + appendReads + `,
			rh AS MATERIALIZED (SELECT place FROM r WHERE EXISTS (SELECT 1 FROM {{schema}}.session_heads WHERE session_id = $1)),
			fits AS MATERIALIZED (SELECT 1 FROM rh WHERE NOT EXISTS (SELECT 1 FROM stored WHERE NOT same)),
			ok AS MATERIALIZED (` + updateHead("$2", "$9", "$10", "$11", "$12", "$13", "EXISTS (SELECT 1 FROM fits)") + `),
			` + upsertPieces("$2", "$10", "$14", "$15") + `,
			` + updateIndex("$2", "$10", "$16") + `,
			head AS (
				UPDATE {{schema}}.session_heads SET stamp = stamp + 1
				WHERE session_id = $1 AND EXISTS (SELECT 1 FROM ok)
				RETURNING stamp),
			app AS (
				INSERT INTO {{schema}}.session_items (session_id, place, seq, kind, name, raw, call_id, answers, stamp)
				SELECT $1, rh.place, t.seq, t.kind, t.name, t.raw, t.call_id, ` + answersExpr("rh.place") + `, head.stamp
				FROM rh, head, t WHERE NOT EXISTS (SELECT 1 FROM stored WHERE stored.seq = t.seq))
			SELECT (SELECT count(*) FROM ok), ` + appendDiffers + `, (SELECT count(*) FROM rh)`),
		version: r.Replace(`SELECT version FROM {{schema}}.run_checkpoints WHERE run_id = $1`),
		delete: r.Replace(`WITH items AS (DELETE FROM {{schema}}.run_checkpoint_items WHERE run_id = $1),
			idx AS (DELETE FROM {{schema}}.run_index WHERE run_id = $1)
			DELETE FROM {{schema}}.run_checkpoints WHERE run_id = $1`),
		// A page of the listing: the runs numbered below the cursor ($1),
		// newest first, one more than the page ($2) to learn whether more
		// follow; each reads its own index (see the migration
		// 0004_run_index.sql). $3 the status or session, $4 the session
		// after a status.
		listAll: r.Replace(`SELECT ` + indexCols + ` FROM {{schema}}.run_index
			WHERE -serial > -$1::bigint ORDER BY -serial LIMIT $2`),
		listStatus: r.Replace(`SELECT ` + indexCols + ` FROM {{schema}}.run_index
			WHERE status = $3 AND serial < $1 ORDER BY serial DESC LIMIT $2`),
		listSession: r.Replace(`SELECT ` + indexCols + ` FROM {{schema}}.run_index
			WHERE session_id = $3 AND serial < $1 ORDER BY serial DESC LIMIT $2`),
		listSessionStatus: r.Replace(`SELECT ` + indexCols + ` FROM {{schema}}.run_index
			WHERE status = $3 AND session_id = $4 AND serial < $1 ORDER BY serial DESC LIMIT $2`),
	}
}

// updateHead is the compare-and-swap of a save that builds on the stored
// version: the update of the run's head (run) from version base to
// version, with its head, and its context when replace is true; cond, if
// not empty, is one more condition. It returns a row if it took.
func updateHead(run, base, version, head, context, replace, cond string) string {
	if cond != "" {
		cond = " AND " + cond
	}
	return `UPDATE {{schema}}.run_checkpoints
				SET version = ` + version + `, data = ` + head + `, context = CASE WHEN ` + replace + `::boolean THEN ` + context + ` ELSE context END
				WHERE run_id = ` + run + ` AND version = ` + base + cond + `
				RETURNING 1`
}

// upsertPieces is the CTE items of a save whose compare-and-swap took (the
// CTE ok has a row): the delta's pieces, at positions seqs with JSON
// data, written at version.
func upsertPieces(run, version, seqs, data string) string {
	return `items AS (
				INSERT INTO {{schema}}.run_checkpoint_items (run_id, seq, version, data)
				SELECT ` + run + `, c.seq, ` + version + `, c.data FROM unnest(` + seqs + `::bigint[], ` + data + `::bytea[]) AS c(seq, data)
				WHERE EXISTS (SELECT 1 FROM ok)
				ON CONFLICT (run_id, seq) DO UPDATE SET version = EXCLUDED.version, data = EXCLUDED.data)`
}

// updateIndex is the CTE idx of a save that builds on the stored version:
// the update of the run's row of the listing, which its first save wrote,
// if the CTE ok has a row. The summary is the five parameters from sum
// on: session, status, agent, turn, pending.
func updateIndex(run, version, sum string) string {
	n, _ := strconv.Atoi(sum[1:])
	p := func(i int) string { return "$" + strconv.Itoa(n+i) }
	return `idx AS (
				UPDATE {{schema}}.run_index SET session_id = ` + p(0) + `, status = ` + p(1) + `, agent = ` + p(2) + `,
					turn = ` + p(3) + `, pending = ` + p(4) + `, version = ` + version + `
				WHERE run_id = ` + run + ` AND EXISTS (SELECT 1 FROM ok))`
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
// them) are saved and appended with one statement, in one round trip: a
// crash-safe tool turn then makes
// two round trips, the save before its call and this one. If another
// writer placed the run or took a position after that statement read them
// (a plain Append of the same run: writers through the checkpoint's
// compare-and-swap exclude each other), or the items are out of order, it
// is a transaction of Append's with the save in its first round trip. A
// save on the stored version of a run whose place a Clear removed takes
// one more round trip: the statement of the common case writes nothing,
// and the general one places the run again.
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
	// The statement's answer: whether the save took, the first position
	// that holds another item, whether the run has its place (one array,
	// one allocation, for the three that Scan's pointers move to the heap).
	var answer [3]int64
	saved, differs, placed := &answer[0], &answer[1], &answer[2]
	on := buildsOn(d)
	for {
		err = s.oneTrip(ctx,
			func(b *pgx.Batch) {
				query := s.ck.saveAppend
				if on {
					query = s.ck.saveAppendOn
				}
				b.Queue(query, saveArgs(a.argsRoom(sessionID, run.ID(), saveArgsLen), d, on)...)
			},
			func(br pgx.BatchResults) error { return br.QueryRow().Scan(saved, differs, placed) })
		if err != nil || *placed == 1 || !on {
			break
		}
		// The run has no place in the session (a Clear removed it), which
		// saveAppendOn does not give: nothing was written.
		on = false
	}
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

// saveDelta applies d with one statement, on the generic plan (see
// genericPlans: a custom plan, which the planner keeps choosing for the
// save, is planned again at every call and costs more than the save
// itself), in one round trip, and reports whether the compare-and-swap
// took.
func (s *Store) saveDelta(ctx context.Context, d *state.Delta) (bool, error) {
	var n int64
	err := s.oneTrip(ctx,
		func(b *pgx.Batch) { s.queueSave(b, d) },
		func(br pgx.BatchResults) error { return br.QueryRow().Scan(&n) })
	if err != nil {
		return false, fmt.Errorf("save checkpoint: %w", err)
	}
	return n == 1, nil
}

// queueSave queues the save of d: ckptQueries.save, or saveOn when d
// builds on the stored version.
func (s *Store) queueSave(b *pgx.Batch, d *state.Delta) {
	query, on := s.ck.save, buildsOn(d)
	if on {
		query = s.ck.saveOn
	}
	args := make([]any, 1, 1+saveArgsLen)
	args[0] = d.RunID
	b.Queue(query, saveArgs(args, d, on)...)
}

// saveArgsLen is the most arguments saveArgs appends.
const saveArgsLen = 13

// buildsOn reports whether d builds on the stored version: it is not the
// run's first save (base 0), which inserts the head and the listing's
// row, nor a full save, which removes the stored items first.
func buildsOn(d *state.Delta) bool { return d.Base > 0 && !d.Full }

// saveArgs appends to args (the statement's arguments before the save's)
// the arguments of the save of d, with its items' positions and JSON: as
// ckptQueries.save and saveAppend take them, or, for saveOn and
// saveAppendOn (on, when d builds on the stored version), without the
// full flag.
func saveArgs(args []any, d *state.Delta, on bool) []any {
	seqs, data := rowcodec.Columns(d)
	sum := d.Summary
	args = append(args, d.Base, d.Version, d.Head, d.Context, d.Full || d.Context != nil)
	if !on {
		args = append(args, d.Full)
	}
	return append(args, seqs, data, sum.SessionID, int16(sum.Status), sum.Agent, int64(sum.Turn), int64(sum.Pending))
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
