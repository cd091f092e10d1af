package postgres_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/session/internal/ckpttest"
	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/state"
)

// TestClearDuringOneStatementAppend clears a session while an append
// waits for the session's lock, having taken its snapshot before the
// Clear committed: a one-statement append (appendOne, or SaveAppend's
// statement), or the first statement of the transaction that items out of
// order take (appendExisting). The append
// must land as if it came after the Clear: the run placed again, every
// item of the call stored there, none at the place the Clear removed.
// Its snapshot says the run has a place and holds the call's first items;
// an append that believed it would write the rest at a place no run
// holds any more.
func TestClearDuringOneStatementAppend(t *testing.T) {
	ctx := t.Context()
	schema, pool := testSchema(t)
	s, err := postgres.New(ctx, pool, postgres.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		saveAppend bool
		reversed   bool
	}{
		{"Append", false, false},
		{"SaveAppend", true, false},
		{"AppendOutOfOrder", false, true},
		{"SaveAppendOutOfOrder", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sid := "s-clear-" + tc.name
			// Another run first, so that this one's place is not the
			// first a fresh session gives.
			other := state.NewRun("other-"+tc.name, "a")
			runcore.SetSessionID(other, sid)
			ckpttest.Turn(t, other, 1)
			if err := s.Append(ctx, sid, other.ID(), other.Items().Slice()); err != nil {
				t.Fatal(err)
			}
			r := state.NewRun("r-"+tc.name, "a")
			runcore.SetSessionID(r, sid)
			ckpttest.Turn(t, r, 1)
			if err := s.Append(ctx, sid, r.ID(), r.Items().Slice()); err != nil {
				t.Fatal(err)
			}
			ckpttest.Turn(t, r, 2)
			all := r.Items().Slice() // the first turn's items, stored, and the second's
			call := slices.Clone(all)
			if tc.reversed {
				slices.Reverse(call)
			}

			// Clear as Store.Clear does, holding the session's lock while the
			// append reads and waits.
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(context.Background()) //nolint:errcheck // committed below
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(1953196404, hashtext($1))`, sid); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				if tc.saveAppend {
					// A run's first save: the one statement for a save
					// that does not build on a stored version.
					done <- s.SaveAppend(ctx, r, sid, call)
				} else {
					done <- s.Append(ctx, sid, r.ID(), call)
				}
			}()
			waitForLockWaiter(t, pool, sid)
			clearSteps(t, tx, schema, sid, clearHeadSQL, clearRunsSQL, clearItemsSQL, clearIndexSQL)
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatalf("append after the Clear = %v, want nil", err)
			}
			landedAfterClear(t, s, pool, schema, sid, r.ID(), all)
		})
	}
}

// TestPopWaitsForAppendsInFlight checks that Pop holds the session's lock
// exclusively, as Clear does: an append in flight holds it shared and
// reads the positions it skips as stored, so a Pop between its read and
// its write would leave a retried append without the item it removed.
func TestPopWaitsForAppendsInFlight(t *testing.T) {
	ctx := t.Context()
	schema, pool := testSchema(t)
	s, err := postgres.New(ctx, pool, postgres.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	const sid = "s-pop"
	r := state.NewRun("r-pop", "a")
	runcore.SetSessionID(r, sid)
	ckpttest.Turn(t, r, 1)
	all := r.Items().Slice()
	if err := s.Append(ctx, sid, r.ID(), all); err != nil {
		t.Fatal(err)
	}
	// An append in flight: the session's lock, held shared.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // committed below
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock_shared(1953196404, hashtext($1))`, sid); err != nil {
		t.Fatal(err)
	}
	type popped struct {
		it  state.Item
		ok  bool
		err error
	}
	done := make(chan popped, 1)
	go func() {
		it, ok, err := s.Pop(ctx, sid)
		done <- popped{it, ok, err}
	}()
	waitForLockWaiter(t, pool, sid)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	p := <-done
	if last := all[len(all)-1]; p.err != nil || !p.ok || !p.it.Equal(last) {
		t.Fatalf("Pop = %v, %v, %v; want %v", p.it, p.ok, p.err, last)
	}
}

// TestClearDuringCommit clears a session while SaveAppend's commit of a
// run's second turn (one statement, ck.commitOn, which takes no lock on
// the session) waits for the session head's row, which the Clear updated
// first: the commit read the run's place in a snapshot taken before the
// Clear committed. It must land as if it came after the Clear: nothing of
// it at the removed place, the run placed again, both its items stored
// there, and the checkpoint saved once.
func TestClearDuringCommit(t *testing.T) {
	ctx := t.Context()
	schema, pool := testSchema(t)
	s, err := postgres.New(ctx, pool, postgres.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	const sid = "s-commit"
	other := state.NewRun("other-commit", "a")
	runcore.SetSessionID(other, sid)
	ckpttest.Turn(t, other, 1)
	if err := s.Append(ctx, sid, other.ID(), other.Items().Slice()); err != nil {
		t.Fatal(err)
	}
	r := state.NewRun("r-commit", "a")
	runcore.SetSessionID(r, sid)
	ckpttest.Turn(t, r, 1)
	if err := s.SaveAppend(ctx, r, sid, r.Items().Slice()); err != nil {
		t.Fatal(err)
	}
	ckpttest.Turn(t, r, 2)
	all := r.Items().Slice()
	fresh := all[len(all)-2:]
	version := r.Version()

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // committed below
	clearSteps(t, tx, schema, sid, lockSessionSQL, clearHeadSQL)
	done := make(chan error, 1)
	go func() { done <- s.SaveAppend(ctx, r, sid, fresh) }()
	waitForRowWaiter(t, pool, schema)
	clearSteps(t, tx, schema, sid, clearRunsSQL, clearItemsSQL, clearIndexSQL)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("SaveAppend after the Clear = %v, want nil", err)
	}
	stored, err := s.Load(ctx, r.ID())
	if err != nil || stored.Version() != version+1 || r.Version() != version+1 {
		t.Fatalf("the store holds version %v (%v) and the run %d, want %d", stored.Version(), err, r.Version(), version+1)
	}
	landedAfterClear(t, s, pool, schema, sid, r.ID(), fresh)
}

// Store.Clear's statements, for a test to run them one by one in a
// transaction of its own ({{schema}} is the test's).
const (
	lockSessionSQL = `SELECT pg_advisory_xact_lock(1953196404, hashtext($1))`
	clearHeadSQL   = `UPDATE {{schema}}.session_heads SET last_place = 0, gen = gen + 1 WHERE session_id = $1`
	clearRunsSQL   = `DELETE FROM {{schema}}.session_runs WHERE session_id = $1`
	clearItemsSQL  = `DELETE FROM {{schema}}.session_items WHERE session_id = $1`
	clearIndexSQL  = `DELETE FROM {{schema}}.session_index WHERE session_id = $1`
)

// clearSteps runs statements, each on session sid, in tx.
func clearSteps(t *testing.T, tx pgx.Tx, schema, sid string, statements ...string) {
	t.Helper()
	for _, q := range statements {
		q = strings.ReplaceAll(q, "{{schema}}", pgx.Identifier{schema}.Sanitize())
		if _, err := tx.Exec(t.Context(), q, sid); err != nil {
			t.Fatal(err)
		}
	}
}

// landedAfterClear fails unless session sid holds want alone, in order,
// the last of them found at run runID's place, and no item at a place no
// run holds: an append that a Clear raced landed after it.
func landedAfterClear(t *testing.T, s *postgres.Store, pool *pgxpool.Pool, schema, sid, runID string, want []state.Item) {
	t.Helper()
	ctx := t.Context()
	got, err := s.List(ctx, sid, 0)
	if err != nil || len(got) != len(want) {
		t.Fatalf("List = %d items (%v), want the call's %d: it came after the Clear", len(got), err, len(want))
	}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Fatalf("List[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	last := want[len(want)-1]
	if it, ok, err := s.Lookup(ctx, sid, runID, last.Seq()); err != nil || !ok || !it.Equal(last) {
		t.Fatalf("Lookup(%d) = %v, %v, %v; want the item, at the run's place", last.Seq(), it, ok, err)
	}
	table := func(name string) string { return pgx.Identifier{schema, name}.Sanitize() }
	var stray int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+table("session_items")+` i
		WHERE i.session_id = $1 AND NOT EXISTS (
			SELECT 1 FROM `+table("session_runs")+` p WHERE p.session_id = i.session_id AND p.place = i.place)`,
		sid).Scan(&stray); err != nil || stray != 0 {
		t.Fatalf("%d items (%v) at a place no run holds", stray, err)
	}
}
