package torture_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/internal/torture"
)

func runLoad(t *testing.T, b torture.Backend) {
	t.Helper()
	runs := 200
	if testing.Short() {
		runs = 40
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := torture.Load(ctx, torture.LoadConfig{Backend: b, Launch: launcher(t), Runs: runs, Sessions: runs / 10, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d runs over %d sessions by %d processes × %d workers in %v: %.0f runs/s, %d items recorded, %d tool executions, %d decisions, %d resumes, %d conflicts (typed, retried)",
		rep.Backend, rep.Runs, runs/10, rep.Processes, rep.Workers, rep.Elapsed.Round(time.Millisecond), rep.RunsPerSecond(),
		rep.Stats.Items, rep.Executions, rep.Stats.Decided, rep.Stats.Resumed, rep.Stats.Conflicts)
	for _, v := range rep.Violations {
		t.Error(v)
	}
	if rep.Runs != runs || rep.Retries != 0 {
		t.Errorf("finished %d runs with %d retries, want %d and 0", rep.Runs, rep.Retries, runs)
	}
	if rep.Stats.Started != int64(runs) {
		t.Errorf("the processes started %d runs, want each of the %d once", rep.Stats.Started, runs)
	}
}

// TestLoadSQLite drives 200 runs over 20 shared sessions with two worker
// processes of four goroutines each on one SQLite file: nothing but typed
// conflicts may fail, and every run finishes with its session complete.
func TestLoadSQLite(t *testing.T) {
	runLoad(t, torture.Backend{Dir: t.TempDir()})
}

// TestLoadPostgres is TestLoadSQLite on PostgreSQL.
func TestLoadPostgres(t *testing.T) {
	runLoad(t, torture.Backend{Dir: t.TempDir(), PostgresURL: postgresURL(t), Schema: fmt.Sprintf("load_%d", time.Now().UnixNano())})
}

func runClaim(t *testing.T, b torture.Backend) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := torture.Claim(ctx, b, launcher(t), 2, "claim-run")
	if err != nil {
		t.Fatal(err)
	}
	ok, conflict := 0, 0
	for _, r := range rep.Results {
		switch r {
		case "ok":
			ok++
		case "conflict":
			conflict++
		default:
			t.Errorf("a process failed: %s", r)
		}
	}
	if diff := cmp.Diff([2]int{1, 1}, [2]int{ok, conflict}); diff != "" {
		t.Errorf("(proceeded, conflicts) mismatch (-want +got):\n%s", diff)
	}
	if rep.Executions != 1 {
		t.Errorf("the approved tool ran %d times, want once", rep.Executions)
	}
}

// TestClaimPostgres: two processes resume the same checkpoint from
// PostgreSQL at once; exactly one proceeds, the other gets
// state.ErrConflict, and the approved tool runs once.
func TestClaimPostgres(t *testing.T) {
	runClaim(t, torture.Backend{Dir: t.TempDir(), PostgresURL: postgresURL(t), Schema: fmt.Sprintf("claim_%d", time.Now().UnixNano())})
}

// TestClaimSQLite is TestClaimPostgres on one SQLite file.
func TestClaimSQLite(t *testing.T) {
	runClaim(t, torture.Backend{Dir: t.TempDir()})
}

// TestLoadRedis is TestLoadSQLite on one Redis server.
func TestLoadRedis(t *testing.T) {
	runLoad(t, torture.Backend{Dir: t.TempDir(), RedisURL: redisURL(t), Schema: fmt.Sprintf("load_%d", time.Now().UnixNano())})
}

// TestClaimRedis is TestClaimPostgres on one Redis server.
func TestClaimRedis(t *testing.T) {
	runClaim(t, torture.Backend{Dir: t.TempDir(), RedisURL: redisURL(t), Schema: fmt.Sprintf("claim_%d", time.Now().UnixNano())})
}
