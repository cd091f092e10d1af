package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/turnkit/turnkit/internal/testenv"
	"github.com/turnkit/turnkit/riverrun"
)

func invoke(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), &out, args); err != nil {
		t.Fatalf("run(%q): %v\n%s", args, err, out.String())
	}
	return out.String()
}

func contains(t *testing.T, got string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}

// TestCycle enqueues, works, decides and works again, each step a new
// invocation as it would be a new process, on SQLite.
func TestCycle(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	cycle(t, "-dir", t.TempDir())
}

// TestCyclePostgres runs the same cycle on PostgreSQL, in a schema of its
// own (River's tables and turnkit's), dropped at the end. It is skipped
// when TURNKIT_POSTGRES_URL is unset, and fails then in CI.
func TestCyclePostgres(t *testing.T) {
	url := testenv.ServerURL(t, "TURNKIT_POSTGRES_URL")
	t.Setenv("OPENAI_API_KEY", "")
	schema := fmt.Sprintf("example_workers_%d", time.Now().UnixNano())
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), url)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	cycle(t, "-postgres", url, "-schema", schema)
}

// cycle runs the commands of the program's doc, with db (the flags that
// choose the database) before each.
func cycle(t *testing.T, db ...string) {
	t.Helper()
	cmd := func(args ...string) string { return invoke(t, append(slices.Clone(db), args...)...) }
	contains(t, cmd("enqueue", "-n", "2"), "enqueued refund-1", "enqueued refund-2")
	contains(t, cmd("enqueue", "-n", "1"), "already enqueued refund-1")
	contains(t, cmd("work", "-idle"),
		`run refund-1 interrupted, waiting for: refund {"invoice":"INV-001"} (call call_refund)`)
	contains(t, cmd("pending"),
		`refund-1: refund {"invoice":"INV-001"} (call call_refund)`,
		`refund-2: refund {"invoice":"INV-002"} (call call_refund)`)
	contains(t, cmd("approve", "-run", "refund-1"), "decided; run refund-1 resumes in job")
	contains(t, cmd("reject", "-run", "refund-2", "-m", "not eligible"), "decided; run refund-2 resumes")
	contains(t, cmd("work", "-idle"),
		"run refund-1 finished: Done: refunded INV-001 (simulated).",
		"run refund-2 finished: I did not refund it: not eligible")
	contains(t, cmd("status"), "refund-1", "completed", "finished: Done: refunded INV-001")
	contains(t, cmd("pending"), "no call waits for a decision")

	var out bytes.Buffer
	err := run(context.Background(), &out, append(slices.Clone(db), "approve", "-run", "refund-1", "-call", "call_refund"))
	if !errors.Is(err, riverrun.ErrFinished) {
		t.Fatalf("approve after the end = %v, want ErrFinished", err)
	}
}
