package scenario

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
)

// The raw-same-writes row of SQLite's crash-safe group: database/sql on
// the modernc driver writing, with plain statements, exactly the rows the
// SQLite store writes for a crash-safe tool turn, into the store's own
// schema (its tables, indexes and triggers, made by its migrations), in
// its transactions and in as many statements: the save before the tool
// (the head's row, then the delta's pieces in one insert), then the
// commit (the next head's row, its pieces if any, and the call and its
// output in one insert, as SaveAppend writes them). Every value the store
// reads, looks up or checks in its statements is computed in Go instead:
// the head is updated by key without the compare-and-swap on its version,
// the items are inserted at the run's place with the session's next write
// stamp, the call their output answers and their behind column (none: they
// go after every item) set from Go, without the lookups of the place, of
// the stamp, of the answered call and of the items after them, and without
// ON CONFLICT. What the store's turn costs over this row is its own
// overhead: its checks and reads, not its schema.

// sameSQLite is the raw-same-writes driver of SQLite: the store's file
// and schema, opened as the store opens it (its DSN, pragmas and pool),
// with the turn's statements prepared once, as the store prepares its
// own. It keeps in Go what the store reads from the file: the session's
// last write stamp, which each commit's items take the next of.
type sameSQLite struct {
	dir, path string
	db        *sql.DB
	head      *sql.Stmt // the head's row of a save, by key
	// pieces[n] inserts n pieces, items[n] n session items, in one
	// statement each, as the store's prepared inserts do.
	pieces [maxSamePieceRows + 1]*sql.Stmt
	items  [maxSameItemRows + 1]*sql.Stmt
	// clear and first are reset's statements, untimed.
	clear []*sql.Stmt
	first *sql.Stmt
	stamp int64 // the session's last write stamp
	args  []any
	raws  []byte // the stored JSON of the commit's items
}

// maxSamePieceRows and maxSameItemRows are the most pieces and items the
// store writes in one insert (its maxPieceRows, and the largest batch of
// its one-statement appends).
const (
	maxSamePieceRows = 4
	maxSameItemRows  = 16
)

// samePending is the summary's count of pending approvals the store
// writes into the head's row at every save of the timed runs
// (state.RunSummary), beside their agent (sameAgent). The summary's
// session and status, which the listing files the run under, the driver
// leaves as the run's first head wrote them: a tool turn does not change
// them, and the store's save, which writes them again, only runs the
// check of its listing's trigger (run_checkpoints_refiled) that finds
// them unchanged.
const samePending = 0

// The store's statements of a tool turn less their reads and checks: the
// head's update by key alone, the inserts of pieces as the store's, and
// the items' insert with every column bound.
const (
	sameHeadSQL = `UPDATE run_checkpoints SET version = ?, data = ?, agent = ?, turn = ?, pending = ? WHERE run_id = ?`
	// The run's first head, which reset writes as the run's first save
	// does: its insert files the run in run_index (run_checkpoints_filed).
	sameFirstHeadSQL = `INSERT INTO run_checkpoints (run_id, version, data, agent, turn, pending, session_id, status)
		VALUES (?, 1, ?, ?, 1, ?, ?, ?)`
	samePiecesSQL   = `INSERT INTO run_checkpoint_items (run_id, version, seq, data) VALUES `
	samePieceRowSQL = `(?, ?, ?, ?)`
	sameItemsSQL    = `INSERT INTO session_items (session_id, place, seq, kind, name, raw, call_id, stamp, answers, behind) VALUES `
	sameItemRowSQL  = `(?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)`
)

// sameClearSQL removes the run as the store's Delete does (its pieces,
// context, head and listing row) and its items from the session, as the
// crash-safe scenarios pop them: untimed, between runs.
var sameClearSQL = []string{
	`DELETE FROM run_checkpoint_items WHERE run_id = ?`,
	`DELETE FROM run_checkpoint_contexts WHERE run_id = ?`,
	`DELETE FROM run_checkpoints WHERE run_id = ?`,
	`DELETE FROM run_index WHERE run_id = ?`,
	`DELETE FROM session_items WHERE session_id = ? AND place = ?`,
}

// openSameSQLite makes the store's schema in a file of its own with the
// store's migrations (sqlite.Open, then Close), and opens the file with
// database/sql as the store does.
func openSameSQLite(tb testing.TB) rawDriver {
	dir, err := os.MkdirTemp("", "turnbench-sqlite-same-")
	if err != nil {
		tb.Fatal(err)
	}
	r := &sameSQLite{dir: dir, path: filepath.Join(dir, "same.db")}
	if err := r.open(); err != nil {
		r.close()
		tb.Fatal(err)
	}
	return r
}

func (r *sameSQLite) open() error {
	s, err := sqlite.Open(r.path)
	if err != nil {
		return err
	}
	if err := s.Close(); err != nil {
		return err
	}
	// The store's DSN and pool (session/sqlite's openDB, its defaults).
	r.db, err = sql.Open("sqlite", r.path+"?_txlock=immediate&_journal_mode=WAL&_synchronous=NORMAL&_foreign_keys=1&_busy_timeout=5000")
	if err != nil {
		return err
	}
	r.db.SetMaxOpenConns(4)
	r.db.SetMaxIdleConns(4)
	r.db.SetConnMaxIdleTime(0)
	if r.head, err = r.db.Prepare(sameHeadSQL); err != nil {
		return err
	}
	if r.first, err = r.db.Prepare(sameFirstHeadSQL); err != nil {
		return err
	}
	for n := 1; n <= maxSamePieceRows; n++ {
		if r.pieces[n], err = r.db.Prepare(valuesSQL(samePiecesSQL, samePieceRowSQL, n)); err != nil {
			return err
		}
	}
	for n := 1; n <= maxSameItemRows; n++ {
		if r.items[n], err = r.db.Prepare(valuesSQL(sameItemsSQL, sameItemRowSQL, n)); err != nil {
			return err
		}
	}
	for _, q := range sameClearSQL {
		st, err := r.db.Prepare(q)
		if err != nil {
			return err
		}
		r.clear = append(r.clear, st)
	}
	return nil
}

// seed appends the history with the store itself, which places the
// history's run first in the session and files the session, then places
// the run after it, as its first append would, and reads the session's
// last write stamp, which the driver keeps from then on.
func (r *sameSQLite) seed(ctx context.Context, history []state.Item) error {
	s, err := sqlite.Open(r.path)
	if err != nil {
		return err
	}
	err = s.Append(ctx, rawSessionID, "history", history)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if _, err := r.db.ExecContext(ctx, `INSERT INTO session_runs (session_id, run_id, place) VALUES (?, ?, ?)`,
		rawSessionID, rawRunID, rawRunPlace); err != nil {
		return fmt.Errorf("place the run: %w", err)
	}
	return r.db.QueryRowContext(ctx, `SELECT max(stamp) FROM session_items WHERE session_id = ?`, rawSessionID).Scan(&r.stamp)
}

// sameInput is the run's input, the first item of its place, which its
// first save appends.
var sameInput = state.UserMessage("go").WithSeq(1)

// reset removes the run and its items, then writes what a run's first
// save writes that the turns build on, in one transaction: the first head
// (the run filed in the listing by the store's trigger) and the run's
// input, at the session's next write stamp. The first save's context and
// pieces, which no turn touches, are left out.
func (r *sameSQLite) reset(ctx context.Context, head []byte) error {
	return inTx(ctx, r.db, func(tx *sql.Tx) error {
		for i, st := range r.clear {
			args := []any{rawRunID}
			if i == len(r.clear)-1 {
				args = []any{rawSessionID, rawRunPlace}
			}
			if _, err := tx.StmtContext(ctx, st).ExecContext(ctx, args...); err != nil {
				return err
			}
		}
		if _, err := tx.StmtContext(ctx, r.first).ExecContext(ctx, rawRunID, head, sameAgent, samePending,
			rawSessionID, int(state.RunUnfinished)); err != nil {
			return err
		}
		r.stamp++
		return r.insertItems(ctx, tx, []state.Item{sameInput}, 0)
	})
}

func (r *sameSQLite) settle(ctx context.Context) error { return truncateLog(ctx, r.db) }

// save writes s at version (of turn turn) in tx as the store's save does:
// the head's row, then the pieces, maxSamePieceRows an insert.
func (r *sameSQLite) save(ctx context.Context, tx *sql.Tx, s *rawSave, version, turn int64, j int) error {
	if _, err := tx.StmtContext(ctx, r.head).ExecContext(ctx, version, s.head, sameAgent, turn, samePending, rawRunID); err != nil {
		return fmt.Errorf("write head: %w", err)
	}
	run, v := any(rawRunID), any(version) // bound once a piece, boxed once
	for ps := s.pieces; len(ps) > 0; {
		n := min(len(ps), maxSamePieceRows)
		args := r.args[:0]
		for _, p := range ps[:n] {
			args = append(args, run, v, shifted(p.Seq, j), p.Data)
		}
		r.args = args
		if _, err := tx.StmtContext(ctx, r.pieces[n]).ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("write pieces: %w", err)
		}
		ps = ps[n:]
	}
	return nil
}

// insertItems appends items in tx at the run's place, at their positions
// in tool turn j, with the session's write stamp r.stamp, maxSameItemRows
// an insert: each with its call ID (calls and outputs), an output with
// the position of the latest call of its ID before it in the batch, as
// the store finds it (a tool turn's output answers the call appended with
// it), and none behind.
func (r *sameSQLite) insertItems(ctx context.Context, tx *sql.Tx, items []state.Item, j int) error {
	sid, place, stamp := any(rawSessionID), any(int64(rawRunPlace)), any(r.stamp)
	for len(items) > 0 {
		n := min(len(items), maxSameItemRows)
		args, raws := r.args[:0], r.raws[:0]
		for i := range n {
			raws = items[i].AppendRaw(raws)
		}
		off := 0
		for i, it := range items[:n] {
			raw := raws[off : off+it.RawLen() : off+it.RawLen()]
			off += it.RawLen()
			var callID, answers any
			if k := it.Kind(); k.IsCall() || k.IsOutput() {
				callID = it.CallID()
				if k.IsOutput() {
					answers = answered(items[:n], i, j)
				}
			}
			args = append(args, sid, place, shifted(it.Seq(), j), it.Kind().String(), it.Name(), raw, callID, stamp, answers)
		}
		r.args, r.raws = args, raws
		if _, err := tx.StmtContext(ctx, r.items[n]).ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("insert items: %w", err)
		}
		items = items[n:]
	}
	return nil
}

// answered returns the position in tool turn j of the latest call in
// items with the call ID of output items[i] before it, or 0.
func answered(items []state.Item, i, j int) int64 {
	var latest int64
	out := items[i]
	for _, c := range items {
		if c.Kind().IsCall() && c.Seq() < out.Seq() && c.CallID() == out.CallID() {
			latest = max(latest, shifted(c.Seq(), j))
		}
	}
	return latest
}

// turn writes tool turn j's save at version v, then its commit at v+1
// with the call and its output, each in one immediate transaction, as the
// store's Save and SaveAppend do.
func (r *sameSQLite) turn(ctx context.Context, v int64, j int, w *rawTurnWrites) error {
	turn := sameTurn(v)
	if err := inTx(ctx, r.db, func(tx *sql.Tx) error { return r.save(ctx, tx, &w.save, v, turn, j) }); err != nil {
		return err
	}
	r.stamp++
	return inTx(ctx, r.db, func(tx *sql.Tx) error {
		if err := r.save(ctx, tx, &w.commit, v+1, turn, j); err != nil {
			return err
		}
		return r.insertItems(ctx, tx, w.items, j)
	})
}

func (r *sameSQLite) close() {
	if r.db != nil {
		_ = r.db.Close() // closes the prepared statements
	}
	_ = os.RemoveAll(r.dir)
}
