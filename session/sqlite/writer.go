package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// A preparer prepares statements: the pool ([sql.DB]) or one of its
// connections ([sql.Conn]).
type preparer interface {
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

// A writer is the connection this process's writes run on, one at a time
// (Store.lockWrite), taken from the pool when the store opens and held
// until it closes, beside the readers' connections (WithMaxConns), with
// the writes' statements prepared on it and the transaction's own BEGIN
// IMMEDIATE, COMMIT and ROLLBACK. A write through database/sql's [sql.Tx]
// cost 10 to 14 µs (a third more) and 8 allocations more a transaction
// of one update by key (BenchmarkWriteTransaction, 2026-12-04): BeginTx
// starts a goroutine that watches the transaction's context until its
// end, waking an idle thread to run it, and Tx.StmtContext makes a
// statement of its own for each statement run.
type writer struct {
	conn                    *sql.Conn
	begin, commit, rollback *sql.Stmt
	ck                      *ckptStmts
	ins                     *appendStmts
}

// openWriter takes the writer's connection from db and prepares its
// statements.
func openWriter(ctx context.Context, db *sql.DB) (*writer, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("take the writer's connection: %w", err)
	}
	w := &writer{conn: conn}
	for _, st := range []struct {
		dst **sql.Stmt
		sql string
	}{{&w.begin, "BEGIN IMMEDIATE"}, {&w.commit, "COMMIT"}, {&w.rollback, "ROLLBACK"}} {
		if *st.dst, err = conn.PrepareContext(ctx, st.sql); err != nil {
			w.close()
			return nil, fmt.Errorf("prepare %s: %w", st.sql, err)
		}
	}
	if w.ck, err = prepareCheckpoints(ctx, conn); err != nil {
		w.close()
		return nil, err
	}
	if w.ins, err = prepareAppends(ctx, conn); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

// close closes the writer's statements and gives its connection back to
// the pool.
func (w *writer) close() {
	if w.ck != nil {
		w.ck.close()
	}
	if w.ins != nil {
		w.ins.close()
	}
	for _, st := range []*sql.Stmt{w.begin, w.commit, w.rollback} {
		if st != nil {
			st.Close()
		}
	}
	w.conn.Close()
}

// inTx runs fn in one immediate transaction on the writer's connection
// and commits if fn returns nil; the caller holds the write turn
// (lockWrite). ctx ends the wait for the database's write lock (BEGIN
// IMMEDIATE runs under it), and a write whose ctx ends before its commit
// is rolled back and commits nothing; the commit, too, runs under ctx.
// fn's statements run under ctx without its cancellation: each is a
// write or read by key (TestStatementPlans), over in microseconds, and
// the driver, for a statement run with a context that can end, starts a
// goroutine to interrupt it and sets a progress handler, 5 allocations
// and a goroutine's start and end a statement (TestWritesUnwatched); a
// request's context can always end.
func (s *Store) inTx(ctx context.Context, fn func(context.Context, *sql.Conn) error) error {
	w := s.w
	_, err := w.begin.ExecContext(ctx)
	if nested(err) {
		w.abort()
		_, err = w.begin.ExecContext(ctx)
	}
	if err != nil {
		w.abort()
		return err
	}
	committed := false
	defer func() {
		if !committed { // fn failed or panicked, or the commit failed and may have left the transaction open
			w.abort()
		}
	}()
	if err := fn(unwatched(ctx), w.conn); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := w.commit.ExecContext(ctx); err != nil {
		return err
	}
	committed = true
	return nil
}

// abort rolls back the writer's transaction whatever the caller's
// context, so that the connection is the next write's. Where none is open
// (BEGIN failed, or the commit ended it) SQLite refuses, harmlessly.
func (w *writer) abort() { _, _ = w.rollback.ExecContext(context.Background()) }

// nested reports whether err is SQLite's refusal to begin a transaction
// inside one: a transaction a failed write left open, which a rollback
// that failed too did not end.
func nested(err error) bool {
	return err != nil && strings.Contains(err.Error(), "within a transaction")
}
