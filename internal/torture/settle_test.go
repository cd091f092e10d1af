package torture

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/turnkit/turnkit/state"
)

// TestSettleWaitsForAKilledClientsCommit: a statement a client sent with
// its implicit commit goes on on the server after the client is gone, and
// commits later (here held back by a lock). settle does not return while
// the server still runs it, and once it returns the commit is visible:
// the checks after a kill read what the killed child wrote, all of it or
// none. Without the wait, the torture check of a sealed PostgreSQL round
// once read a run's checkpoint before such a commit and its session after
// it (issue 32).
func TestSettleWaitsForAKilledClientsCommit(t *testing.T) {
	url := os.Getenv("TURNKIT_POSTGRES_URL")
	if url == "" {
		if os.Getenv("CI") == "true" || os.Getenv("TURNKIT_REQUIRE_BACKENDS") == "1" {
			t.Fatal("TURNKIT_POSTGRES_URL is not set")
		}
		t.Skip("TURNKIT_POSTGRES_URL is not set")
	}
	ctx := t.Context()
	admin := connect(t, url)
	table := fmt.Sprintf("settle_%d", time.Now().UnixNano())
	execSQL(t, admin, "create table "+table+" (id int)")
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), "drop table "+table) })

	locker := connect(t, url)
	lock, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(context.Background())
	if _, err := lock.Exec(ctx, "lock table "+table+" in share mode"); err != nil { // blocks writers
		t.Fatal(err)
	}

	tag := fmt.Sprintf("settle-test-%d", time.Now().UnixNano())
	b := Backend{PostgresURL: url}
	tb, err := b.tagged(tag)
	if err != nil {
		t.Fatal(err)
	}
	// The client is this test binary in a process of its own, killed
	// while the server waits on the lock to run its insert.
	cmd := exec.Command(os.Args[0], "-test.run=^TestSettleVictim$")
	cmd.Env = append(os.Environ(), envVictim+"="+tb.PostgresURL, envVictimSQL+"=insert into "+table+" values (1)")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, admin, "select count(*) from pg_stat_activity where application_name = $1 and wait_event_type = 'Lock'", tag)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err = b.settle(short, tag)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("settle while the killed client's statement waits on the server = %v, want a timeout", err)
	}
	if err := lock.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.settle(ctx, tag); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := admin.QueryRow(ctx, "select count(*) from "+table).Scan(&n); err != nil || n != 1 {
		t.Fatalf("after settle: %d rows (%v), want the killed client's one", n, err)
	}
}

// TestCheckAfterKillReadsTheKilledChildsCommit is issue 32's "the session
// holds items but there is no checkpoint" (a sealed PostgreSQL round,
// seed 1796184678082859834), made deterministic. A torture child on a
// sealed PostgreSQL store sends its run's first save with the run's input
// (one statement, one commit) while the test holds the session's head
// row: the statement waits on the server, and the child is killed there.
// The statement's commit then lands just after the check read the run's
// missing checkpoint, as it can when a check runs at once after a kill:
// the check must not report the run (the checkpoint and the items were
// written together) because it waits for the killed child's statements to
// end first. Without that wait (checkChild's settle) it reports the
// violation.
func TestCheckAfterKillReadsTheKilledChildsCommit(t *testing.T) {
	url := os.Getenv("TURNKIT_POSTGRES_URL")
	if url == "" {
		if os.Getenv("CI") == "true" || os.Getenv("TURNKIT_REQUIRE_BACKENDS") == "1" {
			t.Fatal("TURNKIT_POSTGRES_URL is not set")
		}
		t.Skip("TURNKIT_POSTGRES_URL is not set")
	}
	ctx := t.Context()
	b := Backend{Dir: t.TempDir(), PostgresURL: url, Schema: fmt.Sprintf("afterkill_%d", time.Now().UnixNano()), Sealed: true}
	store, err := b.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	admin := connect(t, url)
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "drop schema "+pgx.Identifier{b.Schema}.Sanitize()+" cascade")
	})

	plan := NewPlan(1796184678082859834, "g0000", 1, 1)
	spec := plan.Runs[0]
	// An uncommitted head row of the run's session holds the child's
	// statement as it executes (its upsert of the head waits for this
	// transaction), after the child sent it whole with its commit; a
	// table lock would hold it at its parse, before it was sent whole.
	locker := connect(t, url)
	lock, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(context.Background())
	if _, err := lock.Exec(ctx, "insert into "+pgx.Identifier{b.Schema, "session_heads"}.Sanitize()+" (session_id, last_place) values ($1, 0)", spec.Session); err != nil {
		t.Fatal(err)
	}
	tag := fmt.Sprintf("afterkill-%d", time.Now().UnixNano())
	launch, err := SelfLauncher("-test.run=^$")
	if err != nil {
		t.Fatal(err)
	}
	ch, err := startChild(launch, childConfig{Mode: modeDrive, Backend: b, Conc: 1, Recover: true, Tag: tag, Plan: &plan})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Kill()
	waitFor(t, admin, "select count(*) from pg_stat_activity where application_name = $1 and wait_event_type = 'Lock' and wait_event = 'transactionid'", tag) // on the head row
	ch.Kill()

	// The commit lands at the check's first read of a missing checkpoint,
	// or after a second: a check that waits for the killed child is
	// waiting then, and reads no missing checkpoint of the run.
	var once sync.Once
	release := func() {
		once.Do(func() {
			if err := lock.Rollback(context.Background()); err != nil {
				t.Error(err)
			}
			if err := b.settle(context.Background(), tag); err != nil { // the commit is visible
				t.Error(err)
			}
		})
	}
	defer release()
	timer := time.AfterFunc(time.Second, release)
	defer timer.Stop()
	missing := 0
	states := loadHook{Store: store, missing: func(id string) {
		if id == spec.ID {
			missing++
		}
		release()
	}}
	res, err := checkChild(ctx, b, tag, true, store, states, plan, map[int]bool{ch.Pid(): true})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range res.Violations {
		t.Error(v)
	}
	release() // after a failed check, the commit may still be held
	if _, err := store.Load(ctx, spec.ID); err != nil {
		t.Fatalf("run %s after the release: %v, want the checkpoint the killed child's commit saved", spec.ID, err)
	}
	if _, ok, err := store.Lookup(ctx, spec.Session, spec.ID, 1); err != nil || !ok {
		t.Fatalf("run %s's input after the release: found %v (%v), want it", spec.ID, ok, err)
	}
	if missing > 0 {
		t.Errorf("the check read run %s's checkpoint missing %d times, want none: it read before the killed child's commit", spec.ID, missing)
	}
}

// loadHook is a state store that calls missing after each load of a
// missing checkpoint, before returning it.
type loadHook struct {
	state.Store
	missing func(runID string)
}

func (h loadHook) Load(ctx context.Context, runID string) (*state.Run, error) {
	run, err := h.Store.Load(ctx, runID)
	if errors.Is(err, state.ErrNotFound) {
		h.missing(runID)
	}
	return run, err
}

// The environment of TestSettleVictim.
const (
	envVictim    = "TURNKIT_SETTLE_VICTIM_URL"
	envVictimSQL = "TURNKIT_SETTLE_VICTIM_SQL"
)

// TestSettleVictim is the client TestSettleWaitsForAKilledClientsCommit
// starts and kills: it runs one statement and waits to be killed. Without
// its environment it does nothing.
func TestSettleVictim(t *testing.T) {
	url := os.Getenv(envVictim)
	if url == "" {
		return
	}
	conn := connect(t, url)
	_, err := conn.Exec(t.Context(), os.Getenv(envVictimSQL))
	t.Fatalf("the statement returned (%v) before the kill", err)
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func execSQL(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	if _, err := conn.Exec(t.Context(), sql); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls query (one argument) until it counts at least one row.
func waitFor(t *testing.T, conn *pgx.Conn, query, arg string) {
	t.Helper()
	for {
		var n int
		if err := conn.QueryRow(t.Context(), query, arg).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
