package torture_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/turnkit/turnkit/internal/torture"
)

// kills returns how many kills a torture test makes: TURNKIT_TORTURE_KILLS
// if set, else def (scaled down under -short).
func kills(t *testing.T, def int) int {
	t.Helper()
	if s := os.Getenv("TURNKIT_TORTURE_KILLS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("TURNKIT_TORTURE_KILLS=%q: want a positive number", s)
		}
		return n
	}
	if testing.Short() {
		return max(def/5, 3)
	}
	return def
}

// runTorture runs n kills on b and fails on any violation. With coverage,
// it also fails a round that did not reach every kind of event the plan
// holds (tripwires, handoffs, retried model calls, timed-out and lost
// lookups): rounds of tens of kills do; a round of a few may not.
func runTorture(t *testing.T, b torture.Backend, n int, coverage bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var progress strings.Builder
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("TURNKIT_TORTURE_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("TURNKIT_TORTURE_SEED=%q: %v", s, err)
		}
	}
	t.Logf("seed %d (set TURNKIT_TORTURE_SEED to replay the plans and kill points)", seed)
	rep, err := torture.Torture(ctx, torture.Config{
		Backend: b, Launch: launcher(t), Kills: n, Seed: seed, Progress: &progress,
	})
	if err != nil {
		t.Fatalf("torture: %v\n%s", err, progress.String())
	}
	t.Logf("%s: %d kills (%v) over %d children, %d generations, %d runs ended (%d by a tripwire, %d terminal outputs withheld), %d handoffs, %d decisions, %d executions, %d retries after a crash, %d lookups run again under a new call ID, %d commits completed on resume, %d model calls retried, %d lookups timed out (%d before they began), %d runs pruned, %d items popped while a run was paused (%d runs resumed after pops of their own items, %d paused for good after a pop into their history), %v",
		rep.Backend, rep.Kills, rep.KillsAt, rep.Children, rep.Generations, rep.Runs, rep.Tripped, rep.Withheld, rep.Handoffs, rep.Approvals, rep.Executions, rep.Retries, rep.LostRetryable, rep.Completed, rep.ModelRetries, rep.TimedOut, rep.TimedOutEarly, rep.Pruned, rep.Pops, rep.PoppedOwn, rep.PoppedHistory, rep.Elapsed.Round(time.Millisecond))
	for _, v := range rep.Violations {
		t.Error(v)
	}
	if rep.Kills < n || rep.Runs == 0 {
		t.Errorf("torture made %d kills and finished %d runs, want %d kills and some runs", rep.Kills, rep.Runs, n)
	}
	if coverage && !testing.Short() && (rep.Tripped == 0 || rep.Handoffs == 0) {
		t.Errorf("torture ended %d runs by a tripwire and made %d handoffs, want some of each", rep.Tripped, rep.Handoffs)
	}
	if coverage && !testing.Short() && (rep.ModelRetries == 0 || rep.TimedOut == 0) {
		t.Errorf("torture retried %d model calls and timed out %d lookups, want some of each", rep.ModelRetries, rep.TimedOut)
	}
	if coverage && !testing.Short() && rep.Pruned == 0 {
		t.Errorf("no ended run was pruned, want some (the generations run with checkpoint.DeleteFinished and KeepLast in turn)")
	}
	if coverage && !testing.Short() && (rep.PoppedOwn == 0 || rep.PoppedHistory == 0) {
		t.Errorf("%d runs resumed after pops of their own items and %d stayed paused after a pop into their history, want some of each", rep.PoppedOwn, rep.PoppedHistory)
	}
	if coverage && !testing.Short() && rep.LostRetryable == 0 {
		t.Errorf("no kill lost a lookup's response, want some (a crash after a retryable call ran and before its commit)")
	}
}

// TestTortureSQLite kills workers on one SQLite file about 50 times (10
// under -short; TURNKIT_TORTURE_KILLS sets the count) and checks after
// every kill that nothing was lost or duplicated and no tool ran twice
// but for counted retries of calls that crashed before their commit.
//
// The torture tests run in parallel with each other: their children spend
// most of their time waiting on the stores and on fsync.
func TestTortureSQLite(t *testing.T) {
	t.Parallel()
	runTorture(t, torture.Backend{Dir: t.TempDir()}, kills(t, 50), true)
}

// TestTorturePostgres is TestTortureSQLite on PostgreSQL.
func TestTorturePostgres(t *testing.T) {
	t.Parallel()
	url := postgresURL(t)
	runTorture(t, torture.Backend{Dir: t.TempDir(), PostgresURL: url, Schema: fmt.Sprintf("torture_%d", time.Now().UnixNano())}, kills(t, 30), true)
}

// TestTortureRedis is TestTortureSQLite on Redis.
func TestTortureRedis(t *testing.T) {
	t.Parallel()
	url := redisURL(t)
	runTorture(t, torture.Backend{Dir: t.TempDir(), RedisURL: url, Schema: fmt.Sprintf("torture_%d", time.Now().UnixNano())}, kills(t, 30), true)
}

// TestTortureSealed is the torture round with encryption at rest on
// (session/encrypt), on each backend: a few kills each (5; -short 3;
// TURNKIT_TORTURE_KILLS sets the count). It fails on any violation; its
// rounds are too small to be sure of reaching every kind of event, which
// the rounds above check.
func TestTortureSealed(t *testing.T) {
	t.Parallel()
	n := 5
	if testing.Short() {
		n = 3
	}
	if os.Getenv("TURNKIT_TORTURE_KILLS") != "" {
		n = kills(t, n)
	}
	// Each backend is made with its subtest's t, so that a missing
	// service skips that subtest alone.
	backends := map[string]func(t *testing.T) torture.Backend{
		"sqlite": func(t *testing.T) torture.Backend { return torture.Backend{Dir: t.TempDir(), Sealed: true} },
		"postgres": func(t *testing.T) torture.Backend {
			return torture.Backend{Dir: t.TempDir(), PostgresURL: postgresURL(t), Schema: fmt.Sprintf("sealed_%d", time.Now().UnixNano()), Sealed: true}
		},
		"redis": func(t *testing.T) torture.Backend {
			return torture.Backend{Dir: t.TempDir(), RedisURL: redisURL(t), Schema: fmt.Sprintf("sealed_%d", time.Now().UnixNano()), Sealed: true}
		},
	}
	for _, name := range []string{"sqlite", "postgres", "redis"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runTorture(t, backends[name](t), n, false)
		})
	}
}
