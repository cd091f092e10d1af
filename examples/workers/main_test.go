package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

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
	dir := t.TempDir()
	contains(t, invoke(t, "-dir", dir, "enqueue", "-n", "2"), "enqueued refund-1", "enqueued refund-2")
	contains(t, invoke(t, "-dir", dir, "enqueue", "-n", "1"), "already enqueued refund-1")
	contains(t, invoke(t, "-dir", dir, "work", "-idle"),
		`run refund-1 interrupted, waiting for: refund {"invoice":"INV-001"} (call call_refund)`)
	contains(t, invoke(t, "-dir", dir, "pending"),
		`refund-1: refund {"invoice":"INV-001"} (call call_refund)`,
		`refund-2: refund {"invoice":"INV-002"} (call call_refund)`)
	contains(t, invoke(t, "-dir", dir, "approve", "-run", "refund-1"), "decided; run refund-1 resumes in job")
	contains(t, invoke(t, "-dir", dir, "reject", "-run", "refund-2", "-m", "not eligible"), "decided; run refund-2 resumes")
	contains(t, invoke(t, "-dir", dir, "work", "-idle"),
		"run refund-1 finished: Done: refunded INV-001 (simulated).",
		"run refund-2 finished: I did not refund it: not eligible")
	contains(t, invoke(t, "-dir", dir, "status"), "refund-1", "completed", "finished: Done: refunded INV-001")
	contains(t, invoke(t, "-dir", dir, "pending"), "no call waits for a decision")

	var out bytes.Buffer
	err := run(context.Background(), &out, []string{"-dir", dir, "approve", "-run", "refund-1", "-call", "call_refund"})
	if !errors.Is(err, riverrun.ErrFinished) {
		t.Fatalf("approve after the end = %v, want ErrFinished", err)
	}
}
