package torture

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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
