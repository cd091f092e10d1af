package postgres_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/internal/ckpttest"
	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/state"
)

// TestSaveAppendPaths covers what SaveAppend does besides the common case
// the conformance suite (ckpttest) runs, one statement for the save and
// the append: items out of Seq order (a transaction of Append's), a
// second output for a call, and a position another writer takes while
// the statement waits for the session's lock.
func TestSaveAppendPaths(t *testing.T) {
	ctx := t.Context()
	schema, pool := testSchema(t)
	s, err := postgres.New(ctx, pool, postgres.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	// started returns a run with a session whose first turn is saved and
	// appended, and a second turn recorded, not saved.
	started := func(t *testing.T, id string) (*state.Run, []state.Item) {
		t.Helper()
		r := state.NewRun(id, "a")
		runcore.SetSessionID(r, "s-"+id)
		ckpttest.Turn(t, r, 1)
		if err := s.SaveAppend(ctx, r, r.SessionID(), r.Items().Slice()); err != nil {
			t.Fatal(err)
		}
		ckpttest.Turn(t, r, 2)
		all := r.Items().Slice()
		return r, all[len(all)-2:]
	}
	// unchanged fails unless the store holds r at version and the session
	// n items.
	unchanged := func(t *testing.T, r *state.Run, version int64, n int) {
		t.Helper()
		stored, err := s.Load(ctx, r.ID())
		if err != nil || stored.Version() != version || r.Version() != version {
			t.Fatalf("after a failed SaveAppend the store holds version %v (%v) and the run %d, want %d", stored.Version(), err, r.Version(), version)
		}
		if items, err := s.List(ctx, r.SessionID(), 0); err != nil || len(items) != n {
			t.Fatalf("after a failed SaveAppend the session holds %d items (%v), want %d", len(items), err, n)
		}
	}

	t.Run("OutOfOrder", func(t *testing.T) {
		r, fresh := started(t, "out-of-order")
		if err := s.SaveAppend(ctx, r, r.SessionID(), []state.Item{fresh[1], fresh[0]}); err != nil {
			t.Fatal(err)
		}
		items, err := s.List(ctx, r.SessionID(), 0)
		if err != nil || len(items) != 4 || !slices.IsSortedFunc(items, func(a, b state.Item) int { return int(a.Seq() - b.Seq()) }) {
			t.Fatalf("List = %v, %v; want the four items in order", items, err)
		}
		// Out of order over a different stored item: nothing is written.
		ckpttest.Turn(t, r, 3)
		all := r.Items().Slice()
		other := state.UserMessage("not this").WithSeq(all[len(all)-1].Seq())
		if err := s.Append(ctx, r.SessionID(), r.ID(), []state.Item{other}); err != nil {
			t.Fatal(err)
		}
		version := r.Version()
		err = s.SaveAppend(ctx, r, r.SessionID(), []state.Item{all[len(all)-1], all[len(all)-2]})
		if !errors.Is(err, session.ErrConflict) {
			t.Fatalf("SaveAppend over a different item = %v, want session.ErrConflict", err)
		}
		unchanged(t, r, version, 5)
	})

	t.Run("DuplicateOutput", func(t *testing.T) {
		r, fresh := started(t, "duplicate")
		first := r.Items().Slice()[1] // the first turn's output
		dup := state.ToolOutput(first.CallID(), first.Name(), `"again"`).WithSeq(fresh[1].Seq())
		version := r.Version()
		err := s.SaveAppend(ctx, r, r.SessionID(), []state.Item{dup})
		if !errors.Is(err, session.ErrDuplicateOutput) {
			t.Fatalf("SaveAppend of a second output = %v, want session.ErrDuplicateOutput", err)
		}
		unchanged(t, r, version, 2)
	})

	// The session was cleared after the run's first turn: the run has no
	// place, which the statement for a save on the stored version does
	// not give; the general one places the run again, in the same call.
	t.Run("Unplaced", func(t *testing.T) {
		r, fresh := started(t, "unplaced")
		if err := s.Clear(ctx, r.SessionID()); err != nil {
			t.Fatal(err)
		}
		version := r.Version()
		if err := s.SaveAppend(ctx, r, r.SessionID(), fresh); err != nil {
			t.Fatalf("SaveAppend after a Clear = %v, want nil", err)
		}
		stored, err := s.Load(ctx, r.ID())
		if err != nil || stored.Version() != version+1 || r.Version() != version+1 {
			t.Fatalf("the store holds version %v (%v) and the run %d, want %d", stored.Version(), err, r.Version(), version+1)
		}
		got, err := s.List(ctx, r.SessionID(), 0)
		if err != nil || len(got) != 2 || !got[0].Equal(fresh[0]) || !got[1].Equal(fresh[1]) {
			t.Fatalf("List = %v, %v; want the second turn's items", got, err)
		}
	})

	// Another writer (a plain Append of the same run: no compare-and-swap)
	// takes a position after the one statement read it: the statement
	// fails on the position's key, and the transaction that replaces it
	// reads the position: the same item is skipped, another one refuses
	// the whole call.
	for _, tc := range []struct {
		name       string
		saveAppend bool
		same       bool
	}{
		{"SaveAppend/PositionTakenSame", true, true},
		{"SaveAppend/PositionTakenDifferent", true, false},
		{"Append/PositionTakenSame", false, true},
		{"Append/PositionTakenDifferent", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, fresh := started(t, strings.ReplaceAll(tc.name, "/", "-"))
			taken := fresh[1]
			if !tc.same {
				taken = state.UserMessage("not this").WithSeq(taken.Seq())
			}
			// Make the statement read the session and then wait: an
			// append waits for the session's lock, which Clear holds
			// exclusively; SaveAppend's commit takes none, and waits for
			// the session head's row, which every append updates.
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(context.Background()) //nolint:errcheck // committed below
			hold := `SELECT pg_advisory_xact_lock(1953196404, hashtext($1))`
			if tc.saveAppend {
				hold = `UPDATE ` + pgx.Identifier{schema, "session_heads"}.Sanitize() + ` SET stamp = stamp WHERE session_id = $1`
			}
			if _, err := tx.Exec(ctx, hold, r.SessionID()); err != nil {
				t.Fatal(err)
			}
			version := r.Version()
			done := make(chan error, 1)
			go func() {
				if tc.saveAppend {
					done <- s.SaveAppend(ctx, r, r.SessionID(), fresh)
				} else {
					done <- s.Append(ctx, r.SessionID(), r.ID(), fresh)
				}
			}()
			if tc.saveAppend {
				waitForRowWaiter(t, pool, schema)
			} else {
				waitForLockWaiter(t, pool, r.SessionID())
			}
			items := pgx.Identifier{schema, "session_items"}.Sanitize()
			if _, err := tx.Exec(ctx, `INSERT INTO `+items+` (session_id, place, seq, kind, name, raw)
				SELECT $1, 1, $2, $3, $4, $5`, r.SessionID(), taken.Seq(), taken.Kind().String(), taken.Name(), taken.AppendRaw(nil)); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			err = <-done
			if !tc.same {
				if !errors.Is(err, session.ErrConflict) {
					t.Fatalf("= %v, want session.ErrConflict", err)
				}
				unchanged(t, r, version, 3) // the first turn and the taken position
				return
			}
			if err != nil {
				t.Fatalf("= %v, want nil (the taken position holds the same item)", err)
			}
			if tc.saveAppend {
				stored, err := s.Load(ctx, r.ID())
				if err != nil || stored.Version() != r.Version() || r.Version() != version+1 || stored.Len() != 4 {
					t.Fatalf("the store holds %v (%v), want the save of the second turn, at version %d", stored, err, version+1)
				}
			}
			got, err := s.List(ctx, r.SessionID(), 0)
			if err != nil || len(got) != 4 || got[2].Seq() != fresh[0].Seq() || got[3].Seq() != fresh[1].Seq() {
				t.Fatalf("List = %v, %v; want both turns", got, err)
			}
		})
	}
}

// waitForLockWaiter waits until a connection waits for the session's
// advisory lock.
func waitForLockWaiter(t *testing.T, pool queryRower, sessionID string) {
	t.Helper()
	waitUntil(t, pool, "a connection waiting for the session's lock",
		`SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
			AND classid = 1953196404 AND objid = (hashtext($1)::bigint & 4294967295)::oid)`, sessionID)
}

// waitForRowWaiter waits until a statement on schema's tables waits for
// a lock: a row another transaction updated and has not committed yet.
func waitForRowWaiter(t *testing.T, pool queryRower, schema string) {
	t.Helper()
	waitUntil(t, pool, "a statement on the schema's tables waiting for a lock",
		`SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid() AND strpos(query, $1) > 0)`, schema)
}

// queryRower is what waitUntil queries.
type queryRower interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}

// waitUntil polls the boolean query q with arg for up to 5 seconds, until
// it holds; it fails the test, naming what it waited for, if it never does.
func waitUntil(t *testing.T, pool queryRower, what, q string, arg any) {
	t.Helper()
	for range 500 {
		var ok bool
		if err := pool.QueryRow(t.Context(), q, arg).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %s", what)
}
