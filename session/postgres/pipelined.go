package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// txConn is what the steps of a transaction after its first round trip
// use: the connection the transaction is open on.
type txConn interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// pipelinedTx runs a transaction on session sessionID whose BEGIN, the
// session's shared lock (lockShared, which also puts the statements after
// it on generic plans) and first statements go in one round trip: queue
// adds the statements to the batch after the lock, which they read after
// (see appendReads), read reads their results, and rest, if read
// succeeded, goes on in the same transaction on the same connection. It
// commits if both succeed and rolls back otherwise. The common append is
// then two round trips (the batch and the COMMIT) where pgx.BeginFunc
// takes three: its BEGIN is one of its own.
//
// A connection whose transaction could not be ended (the rollback failed)
// is closed rather than returned to the pool in the middle of one.
func (s *Store) pipelinedTx(ctx context.Context, sessionID string, queue func(*pgx.Batch), read func(pgx.BatchResults) error, rest func(txConn) error) (err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	committed := false
	defer func() {
		if committed {
			return
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, rerr := conn.Exec(rctx, "rollback"); rerr != nil || conn.Conn().PgConn().TxStatus() != 'I' {
			_ = conn.Hijack().Close(rctx) // never back to the pool inside a transaction
		}
	}()
	var b pgx.Batch
	b.Queue("begin")
	b.Queue(s.q.lockShared, sessionID)
	queue(&b)
	br := conn.SendBatch(ctx, &b)
	_, beginErr := br.Exec()
	if beginErr == nil {
		_, beginErr = br.Exec()
	}
	readErr := error(nil)
	if beginErr == nil {
		readErr = read(br)
	}
	closeErr := br.Close()
	switch {
	case beginErr != nil:
		return fmt.Errorf("begin: %w", beginErr)
	case readErr != nil:
		return readErr
	}
	// A statement of the batch that failed was read by read, which keeps
	// its error for rest to report (as a typed error where it knows one).
	if rest != nil {
		if err := rest(conn); err != nil {
			return err
		}
	}
	if closeErr != nil {
		return closeErr
	}
	if _, err := conn.Exec(ctx, "commit"); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	committed = true
	return nil
}

// genericPlans makes the statements after it in its transaction run on
// generic plans. The appends' statements are large CTEs whose planning,
// with the custom plans PostgreSQL keeps choosing for them, costs more than
// their execution: one generic plan per connection serves every call (an
// append measured 0.26 ms against 0.65 ms on the server). set_config, not
// SET LOCAL, so that it also holds in the implicit transaction of oneTrip.
const genericPlans = "select " + genericPlansCall

// genericPlansCall is genericPlans' call, which a statement may make
// itself instead, for the statements after it.
const genericPlansCall = "set_config('plan_cache_mode', 'force_generic_plan', true)"

// oneTrip runs the statements queue adds in one round trip, as one
// transaction, on generic plans (genericPlans): the implicit transaction
// of a pipeline without BEGIN, which its Sync, at the end of the batch,
// commits if every statement succeeded and rolls back otherwise (the
// server skips what follows a statement that fails). read reads their
// results; it cannot stop the commit, so the statements must decide among
// themselves whether to write.
func (s *Store) oneTrip(ctx context.Context, queue func(*pgx.Batch), read func(pgx.BatchResults) error) error {
	return s.trip(ctx, true, queue, read)
}

// plainTrip is oneTrip without genericPlans: the first statement chooses
// the plans of the others itself (see queries.lockShared).
func (s *Store) plainTrip(ctx context.Context, queue func(*pgx.Batch), read func(pgx.BatchResults) error) error {
	return s.trip(ctx, false, queue, read)
}

// trip is oneTrip, with genericPlans first if generic is true.
func (s *Store) trip(ctx context.Context, generic bool, queue func(*pgx.Batch), read func(pgx.BatchResults) error) error {
	var b pgx.Batch
	if generic {
		b.Queue(genericPlans)
	}
	queue(&b)
	br := s.pool.SendBatch(ctx, &b)
	var err error
	if generic {
		_, err = br.Exec()
	}
	if err == nil {
		err = read(br)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}
