package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/sessiontest"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
)

// hookCodec stores items as their JSON, calling hook before it encodes
// each, inside the write's transaction: an error it returns fails the
// write.
type hookCodec struct{ hook func() error }

func (c *hookCodec) SealItem(_ context.Context, dst []byte, _, _ string, it state.Item) ([]byte, error) {
	if c.hook != nil {
		if err := c.hook(); err != nil {
			return nil, err
		}
	}
	return append(dst, it.Raw()...), nil
}

func (c *hookCodec) OpenItem(_ context.Context, _, _ string, kind state.Kind, seq int64, name string, stored []byte) (state.Item, error) {
	it, err := state.ParseItem(kind, stored)
	if err != nil {
		return state.Item{}, err
	}
	return it.WithSeq(seq).WithName(name), nil
}

func hooked(t *testing.T) (*sqlite.Store, *hookCodec) {
	t.Helper()
	c := &hookCodec{}
	s, err := sqlite.Open(filepath.Join(t.TempDir(), "writer.db"), sqlite.WithItemCodec(c))
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// TestWriteCancelledBeforeCommit cancels an append's context inside its
// transaction, after its statements ran: nothing is committed, the error
// says why, and the writer's connection serves the next write, with no
// transaction left open on it.
func TestWriteCancelledBeforeCommit(t *testing.T) {
	s, c := hooked(t)
	defer s.Close()
	ctx, cancel := context.WithCancel(t.Context())
	c.hook = func() error { cancel(); return nil }
	err := s.Append(ctx, "s", "r", sessiontest.Batch(0))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("append whose context ended in its transaction: %v, want context.Canceled", err)
	}
	c.hook = nil
	if items, err := s.List(t.Context(), "s", 0); err != nil || len(items) != 0 {
		t.Fatalf("after the cancelled append the session holds %d items (%v), want none", len(items), err)
	}
	for i := range int64(2) {
		if err := s.Append(t.Context(), "s", "r", sessiontest.Batch(i)); err != nil {
			t.Fatalf("append %d after the cancelled one: %v", i, err)
		}
	}
	if items, err := s.List(t.Context(), "s", 0); err != nil || len(items) != 6 {
		t.Fatalf("the session holds %d items (%v), want 6", len(items), err)
	}
}

// TestFailedWriteRollsBack fails appends inside their transaction, after
// the run was placed (their item codec fails, or panics, on the batch's
// third item): nothing of them is stored, and the next write runs on the
// writer's connection with no transaction left open.
func TestFailedWriteRollsBack(t *testing.T) {
	s, c := hooked(t)
	defer s.Close()
	ctx := t.Context()
	if err := s.Append(ctx, "s", "r", sessiontest.Batch(0)); err != nil {
		t.Fatal(err)
	}
	refusal := errors.New("refused")
	for _, panics := range []bool{false, true} {
		n := 0
		c.hook = func() error {
			if n++; n < 3 {
				return nil
			}
			if panics {
				panic(refusal)
			}
			return refusal
		}
		func() {
			defer func() {
				if r := recover(); r != nil && (!panics || r != refusal) {
					t.Fatalf("recovered %v", r)
				}
			}()
			if err := s.Append(ctx, "s", "r2", sessiontest.Batch(1)); !errors.Is(err, refusal) {
				t.Fatalf("append whose codec failed: %v, want the codec's error", err)
			}
		}()
		c.hook = nil
		if items, err := s.List(ctx, "s", 0); err != nil || len(items) != 3 {
			t.Fatalf("panics %v: after the failed append the session holds %d items (%v), want 3", panics, len(items), err)
		}
	}
	if err := s.Append(ctx, "s", "r2", sessiontest.Batch(1)); err != nil {
		t.Fatalf("append after writes that failed in their transaction: %v", err)
	}
	if items, err := s.List(ctx, "s", 0); err != nil || len(items) != 6 {
		t.Fatalf("the session holds %d items (%v), want 6", len(items), err)
	}
}

// TestCloseDuringWrite closes the store while a write is in its
// transaction and another waits for its turn: the first ends (Close
// waits for it), the second fails with session.ErrClosed, and nothing
// waits forever.
func TestCloseDuringWrite(t *testing.T) {
	s, c := hooked(t)
	inTx, release := make(chan struct{}), make(chan struct{})
	c.hook = func() error {
		close(inTx)
		<-release
		c.hook = nil
		return nil
	}
	first, second, closed := make(chan error, 1), make(chan error, 1), make(chan error, 1)
	go func() { first <- s.Append(context.Background(), "s", "r", sessiontest.Batch(0)[:1]) }()
	<-inTx
	go func() { second <- s.Append(context.Background(), "s", "r", sessiontest.Batch(1)) }()
	time.Sleep(10 * time.Millisecond) // the second waits for the write turn
	go func() { closed <- s.Close() }()
	time.Sleep(10 * time.Millisecond) // Close waits for the first
	close(release)
	timeout := time.After(30 * time.Second)
	for _, ch := range []struct {
		name string
		ch   chan error
	}{{"the write in flight", first}, {"Close", closed}, {"the waiting write", second}} {
		select {
		case err := <-ch.ch:
			switch ch.name {
			case "the waiting write":
				if !errors.Is(err, session.ErrClosed) {
					t.Errorf("%s: %v, want session.ErrClosed", ch.name, err)
				}
			default:
				if err != nil {
					t.Errorf("%s: %v", ch.name, err)
				}
			}
		case <-timeout:
			t.Fatalf("%s did not return", ch.name)
		}
	}
}

// BenchmarkWriteTransaction is one immediate transaction of one update by
// key, through database/sql's Tx (BeginTx, Tx.StmtContext of a prepared
// statement, Commit) and as the store's writer runs it (BEGIN IMMEDIATE,
// the statement and COMMIT prepared on a connection held for writes).
func BenchmarkWriteTransaction(b *testing.B) {
	path := filepath.Join(b.TempDir(), "tx.db")
	s, err := sqlite.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", path+"?_txlock=immediate&_journal_mode=WAL&_synchronous=NORMAL")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	const update = `UPDATE session_stamps SET stamp = stamp + 1 WHERE session_id = 'bench'`
	if _, err := db.Exec(`INSERT INTO session_stamps (session_id, stamp, gen) VALUES ('bench', 1, 1)`); err != nil {
		b.Fatal(err)
	}
	b.Run("sql.Tx", func(b *testing.B) {
		upd, err := db.PrepareContext(ctx, update)
		if err != nil {
			b.Fatal(err)
		}
		defer upd.Close()
		b.ReportAllocs()
		for b.Loop() {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tx.StmtContext(ctx, upd).ExecContext(ctx); err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("writer", func(b *testing.B) {
		conn, err := db.Conn(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		var stmts [3]*sql.Stmt
		for i, q := range []string{"BEGIN IMMEDIATE", update, "COMMIT"} {
			if stmts[i], err = conn.PrepareContext(ctx, q); err != nil {
				b.Fatal(err)
			}
			defer stmts[i].Close()
		}
		b.ReportAllocs()
		for b.Loop() {
			for _, st := range stmts {
				if _, err := st.ExecContext(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
