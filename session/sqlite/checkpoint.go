package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

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
// run_checkpoints.data, its context in run_checkpoint_contexts (written
// only when it changes), and its items in run_checkpoint_items, one row per
// piece (an item, a guardrail result or a model call), keyed by the
// version of the save that wrote it and then its position, so that each
// save's rows follow the run's stored ones. A save writes the head and what changed since the last save,
// so its cost does not grow with the run's history.
// A whole checkpoint of the earlier format is a head row alone.

// ckptStmts are the checkpoint statements, prepared once per store and
// reused by every save and load.
type ckptStmts struct {
	load, version, insertHead, updateHead, updateFiled *sql.Stmt
	// pieces[n] inserts n pieces (piecesSQL); pieces[0] is not used.
	pieces                                              [maxPieceRows + 1]*sql.Stmt
	upsertContext, clearItems, clearContext, deleteHead *sql.Stmt
	// The listing's (list.go).
	indexDelete, listAll, listStatus, listSession, listSessionStatus *sql.Stmt
}

// all returns the statements' fields, in the order of ckptSQL.
func (c *ckptStmts) all() []**sql.Stmt {
	return []**sql.Stmt{&c.load, &c.version, &c.insertHead, &c.updateHead, &c.updateFiled,
		&c.pieces[1], &c.pieces[2], &c.pieces[3], &c.pieces[4], &c.upsertContext, &c.clearItems,
		&c.clearContext, &c.deleteHead, &c.indexDelete, &c.listAll, &c.listStatus,
		&c.listSession, &c.listSessionStatus}
}

// prepareCheckpoints prepares the checkpoint statements on db: the pool,
// for the reads, or the writer's connection.
func prepareCheckpoints(ctx context.Context, db preparer) (*ckptStmts, error) {
	c := &ckptStmts{}
	dst := c.all()
	for i, q := range ckptSQL {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			c.close()
			return nil, fmt.Errorf("prepare checkpoint statement %d: %w", i, err)
		}
		*dst[i] = st
	}
	return c, nil
}

// close closes the statements prepared so far.
func (c *ckptStmts) close() {
	for _, st := range c.all() {
		if *st != nil {
			_ = (*st).Close()
		}
	}
}

// Load returns the run's checkpoint, a new [state.Run] with its stored
// version set, or a [*state.StoreError] wrapping [state.ErrNotFound]. It
// reads the head, the context and the items in one statement, one
// consistent snapshot, and reassembles them with [state.Assemble]; a
// checkpoint whose rows were edited, removed or added behind the store's
// back fails with [state.ErrTampered] when the store verifies signatures
// (see [WithCodec]), with [state.ErrInvalid] otherwise.
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
	rows, err := s.ck.load.QueryContext(ctx, runID)
	if err != nil {
		return nil, s.gate.WrapRun(ctx, "load", runID, err)
	}
	defer rows.Close()
	var (
		found         bool
		version       int64
		head, context []byte
		items         []state.Piece
	)
	for rows.Next() {
		var (
			part   int
			v, seq int64
			data   []byte
		)
		if err := rows.Scan(&part, &v, &seq, &data); err != nil {
			return nil, s.gate.WrapRun(ctx, "load", runID, err)
		}
		switch part {
		case 0:
			found, version, head = true, v, data
		case 1:
			context = data
		default:
			items = append(items, state.Piece{Seq: seq, Version: v, Data: data})
		}
	}
	if err := rows.Err(); err != nil {
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
// stored), in one immediate transaction, and then sets run's version to the
// new one. Otherwise it returns a [*state.StoreError] wrapping
// [state.ErrConflict] and changes nothing. A save writes the run's head and
// one row per item recorded since the last save, whatever the history.
func (s *Store) Save(ctx context.Context, run *state.Run) error {
	return s.SaveAppend(ctx, run, "", nil)
}

// SaveAppend saves run as [Store.Save] does and appends items of run to the
// session as [Store.Append] does, in one immediate transaction: both or
// neither. A checkpoint conflict appends nothing; an append that fails
// (a different item stored at a position, [session.ErrConflict], or any
// error) leaves the checkpoint as it was. run's version moves on only after
// the commit. The append is idempotent, as Append's is; a retry of a call
// that committed although its caller saw an error fails with
// [state.ErrConflict], as any save of an outdated version does. With no
// items it is Save, and sessionID is not used; otherwise the arguments are
// checked as Append checks them ([session.ErrInvalid]), before anything is
// written.
func (s *Store) SaveAppend(ctx context.Context, run *state.Run, sessionID string, items []state.Item) error {
	d, err := s.codec.Delta(run)
	if err != nil {
		return err
	}
	// The driver copies each part it binds (into SQLite's memory), so a
	// sealed delta's buffer serves the next save once this one returns.
	defer d.Release()
	if err := s.gate.BeginRun(ctx, "save", run.ID()); err != nil {
		return err
	}
	if len(items) > 0 {
		if err := rowcodec.Validate(pkg, sessionID, run.ID(), items); err != nil {
			return err
		}
	}
	if err := s.lockWrite(ctx); err != nil {
		return s.gate.WrapRun(ctx, "save", run.ID(), err)
	}
	defer s.unlockWrite()
	err = s.inTx(ctx, func(ctx context.Context, tx *sql.Conn) error {
		if err := s.saveDelta(ctx, d); err != nil {
			return err
		}
		if len(items) == 0 {
			return nil
		}
		return s.append(ctx, tx, sessionID, run.ID(), items)
	})
	if err != nil {
		if errors.Is(err, session.ErrConflict) || errors.Is(err, session.ErrInvalid) {
			return err // says what and where
		}
		return s.gate.WrapRun(ctx, "save", run.ID(), err)
	}
	runcore.Saved(run, d)
	return nil
}

// saveDelta applies d in tx: the head written as a compare-and-swap on
// the stored version (a run's first save inserts it where there is none,
// a saved run's updates the row of its base version), with the session
// and status the head's triggers file the run's listing row under, then
// the context and the items d carries.
func (s *Store) saveDelta(ctx context.Context, d *state.Delta) error {
	sum := d.Summary
	var (
		res sql.Result
		err error
	)
	if d.Base == 0 {
		res, err = s.w.ck.insertHead.ExecContext(ctx, d.RunID, d.Version, d.Head,
			sum.Agent, sum.Turn, sum.Pending, sum.SessionID, int(sum.Status))
	} else {
		// Most saves file the run where it is: try the head without the
		// listing's columns first, then with them.
		res, err = s.w.ck.updateFiled.ExecContext(ctx, d.Version, d.Head,
			sum.Agent, sum.Turn, sum.Pending, d.RunID, d.Base, sum.SessionID, int(sum.Status))
		if n, rerr := rowsAffected(res, err); rerr == nil && n == 0 {
			res, err = s.w.ck.updateHead.ExecContext(ctx, d.Version, d.Head,
				sum.Agent, sum.Turn, sum.Pending, sum.SessionID, int(sum.Status), d.RunID, d.Base)
		}
	}
	n, err := rowsAffected(res, err)
	if err != nil {
		return fmt.Errorf("write head: %w", err)
	}
	if n == 0 {
		return s.versionConflict(ctx, d)
	}
	if d.Full {
		if _, err := s.w.ck.clearItems.ExecContext(ctx, d.RunID); err != nil {
			return fmt.Errorf("clear items: %w", err)
		}
		if _, err := s.w.ck.clearContext.ExecContext(ctx, d.RunID); err != nil {
			return fmt.Errorf("clear context: %w", err)
		}
	}
	if d.Context != nil {
		if _, err := s.w.ck.upsertContext.ExecContext(ctx, d.RunID, d.Context); err != nil {
			return fmt.Errorf("write context: %w", err)
		}
	}
	if err := s.insertPieces(ctx, d); err != nil {
		return err
	}
	return nil
}

// rowsAffected returns the rows a statement that returned res and err
// changed.
func rowsAffected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// insertPieces writes d's pieces in tx, maxPieceRows an insert: a steady
// save's in one statement, where it ran one a piece.
func (s *Store) insertPieces(ctx context.Context, d *state.Delta) error {
	if len(d.Items) == 0 {
		return nil
	}
	run, version := any(d.RunID), any(d.Version) // bound once a piece, boxed once
	args := make([]any, 0, 4*min(len(d.Items), maxPieceRows))
	for ps := d.Items; len(ps) > 0; {
		n := min(len(ps), maxPieceRows)
		args = args[:0]
		for _, p := range ps[:n] {
			if p.Version != d.Version {
				return fmt.Errorf("write piece %d: version %d in a save of version %d", p.Seq, p.Version, d.Version)
			}
			args = append(args, run, version, p.Seq, p.Data)
		}
		if _, err := s.w.ck.pieces[n].ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("write pieces %d to %d: %w", ps[0].Seq, ps[n-1].Seq, err)
		}
		ps = ps[n:]
	}
	return nil
}

// versionConflict returns the conflict of a save whose head was not
// written: the version stored (0: none) is not d's base.
func (s *Store) versionConflict(ctx context.Context, d *state.Delta) error {
	var stored int64
	err := s.w.ck.version.QueryRowContext(ctx, d.RunID).Scan(&stored)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("read the stored version: %w", err)
	}
	return rowcodec.VersionConflict(d.RunID, d.Base, stored)
}

// Delete removes the run's checkpoint, its head, context and items, in one
// transaction; deleting a missing one is not an error.
func (s *Store) Delete(ctx context.Context, runID string) error {
	if err := s.gate.BeginRun(ctx, "delete", runID); err != nil {
		return err
	}
	if err := s.lockWrite(ctx); err != nil {
		return s.gate.WrapRun(ctx, "delete", runID, err)
	}
	defer s.unlockWrite()
	// The removal of a long run's items is left to the caller's context,
	// which interrupts it, as Clear's is.
	return s.gate.WrapRun(ctx, "delete", runID, s.inTx(ctx, func(context.Context, *sql.Conn) error {
		ck := s.w.ck
		for _, st := range [...]*sql.Stmt{ck.clearItems, ck.clearContext, ck.deleteHead, ck.indexDelete} {
			if _, err := st.ExecContext(ctx, runID); err != nil {
				return err
			}
		}
		return nil
	}))
}
