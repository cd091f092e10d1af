package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/internal/testenv"
	"github.com/turnkit/turnkit/session/internal/ckpttest"
	"github.com/turnkit/turnkit/state"
)

// TestOneTrip checks oneTrip's transaction on one connection: its
// statements run on generic plans and the setting ends with them; a
// statement that fails rolls back those before it and leaves the
// connection out of any transaction.
func TestOneTrip(t *testing.T) {
	ctx := t.Context()
	cfg, err := pgxpool.ParseConfig(testenv.ServerURL(t, "TURNKIT_POSTGRES_URL"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1 // every call below on the same connection
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s := &Store{pool: pool}
	show := func(b *pgx.Batch) { b.Queue("show plan_cache_mode") }
	var mode string
	if err := s.oneTrip(ctx, show, func(br pgx.BatchResults) error { return br.QueryRow().Scan(&mode) }); err != nil {
		t.Fatal(err)
	}
	if mode != "force_generic_plan" {
		t.Errorf("plan_cache_mode in oneTrip = %q, want force_generic_plan", mode)
	}
	if err := pool.QueryRow(ctx, "show plan_cache_mode").Scan(&mode); err != nil || mode == "force_generic_plan" {
		t.Errorf("plan_cache_mode after oneTrip = %q (%v), want the connection's own", mode, err)
	}

	if _, err := pool.Exec(ctx, "create temporary table onetrip (n int primary key)"); err != nil {
		t.Fatal(err)
	}
	err = s.oneTrip(ctx, func(b *pgx.Batch) {
		b.Queue("insert into onetrip values (1)")
		b.Queue("insert into onetrip values (1)") // fails on the key
	}, func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return err
		}
		_, err := br.Exec()
		return err
	})
	if pe, ok := errors.AsType[*pgconn.PgError](err); !ok || pe.Code != "23505" {
		t.Fatalf("oneTrip = %v, want the second insert's unique violation", err)
	}
	var n int
	if err := pool.QueryRow(context.Background(), "select count(*) from onetrip").Scan(&n); err != nil || n != 0 {
		t.Errorf("onetrip holds %d rows (%v) after the failed oneTrip, want 0: the first insert rolled back", n, err)
	}
}

// oneConnStore returns a store in a schema of its own over a pool of one
// connection, so that its saves and the view of their plans
// (pg_prepared_statements, per connection) share it; both go at the
// test's end.
func oneConnStore(t *testing.T) (*Store, *pgxpool.Pool) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(testenv.ServerURL(t, "TURNKIT_POSTGRES_URL"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "turnkit_generic_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE") //nolint:errcheck
	})
	s, err := New(t.Context(), pool, WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	return s, pool
}

// TestSaveRunsGenericPlans checks that a checkpoint save runs on a
// generic plan: its one statement from its first call (a custom plan is
// planned again at every call, and the planner kept choosing one for the
// run's first save, whose planning cost more than its execution), and
// the simple statements of a save that builds on the stored version after
// the plan cache's five trials of a custom plan.
func TestSaveRunsGenericPlans(t *testing.T) {
	ctx := t.Context()
	s, pool := oneConnStore(t)
	run := state.NewRun("generic", "agent")
	const saves = 12
	for i := range saves {
		if err := runcore.SetHistory(run, []state.Item{state.UserMessage("m" + strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
		if err := s.Save(ctx, run); err != nil {
			t.Fatalf("save %d: %v", i, err)
		}
	}
	// The run's first save inserts its head (ck.save); the others build
	// on the stored version (ck.casOn).
	for _, c := range []struct {
		name, statement string
		saves, trials   int64
	}{{"first", s.ck.save, 1, 0}, {"later", s.ck.casOn, saves - 1, 5}} {
		var generic, custom int64
		err := pool.QueryRow(ctx, "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1",
			c.statement).Scan(&generic, &custom)
		if err != nil {
			t.Fatalf("the %s saves' prepared statement: %v", c.name, err)
		}
		if custom > c.trials || generic+custom != c.saves {
			t.Errorf("the %s saves ran %.30q… on %d generic and %d custom plans, want %d in all, at most %d custom",
				c.name, c.statement, generic, custom, c.saves, c.trials)
		}
	}
}

// TestSaveAppendRunsGenericPlans checks that the commit of SaveAppend's
// common case (ck.commitOn's paired statement of a turn's pieces and two
// items: a tool call and its output) runs on its generic plan after the
// plan cache's five trials of a custom plan: a custom plan is planned
// again at every call, and planning the commit's statement costs more
// than running it.
func TestSaveAppendRunsGenericPlans(t *testing.T) {
	ctx := t.Context()
	s, pool := oneConnStore(t)
	run := state.NewRun("generic", "agent")
	runcore.SetSessionID(run, "generic-session")
	const turns = 12
	var commit string
	for i := range turns {
		ckpttest.Turn(t, run, i+1)
		all := run.Items().Slice()
		items := all[len(all)-2:]
		if i > 0 {
			d, err := run.Delta()
			if err != nil {
				t.Fatal(err)
			}
			a, err := s.newAppendCols(ctx, run.SessionID(), run.ID(), items)
			if err != nil {
				t.Fatal(err)
			}
			if q := s.ck.commitOn.of(d, a); commit != "" && q != commit {
				t.Fatalf("turn %d commits with another statement: %.80q", i+1, q)
			} else {
				commit = q
			}
		}
		if err := s.SaveAppend(ctx, run, run.SessionID(), items); err != nil {
			t.Fatalf("turn %d: %v", i+1, err)
		}
	}
	// The run's first SaveAppend places it with the general statement;
	// the others build on the stored version.
	var generic, custom int64
	err := pool.QueryRow(ctx, "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1",
		commit).Scan(&generic, &custom)
	if err != nil {
		t.Fatalf("the commits' prepared statement: %v", err)
	}
	if custom > 5 || generic+custom != turns-1 {
		t.Errorf("the commits ran on %d generic and %d custom plans, want %d in all, at most 5 custom", generic, custom, turns-1)
	}
}
