package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
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

func TestApproveInASecondInvocation(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	dir := t.TempDir()
	contains(t, invoke(t, "-dir", dir),
		`waiting for approval: delete_files {"pattern":"/tmp/build-cache-*"} (call call_delete_1)`,
		"checkpoint saved")
	if _, err := os.Stat(filepath.Join(dir, "cleanup-1.json")); err != nil {
		t.Fatalf("no checkpoint file: %v", err)
	}
	contains(t, invoke(t, "-dir", dir, "-approve"),
		"tool_output       deleted 3 files matching /tmp/build-cache-* (simulated)",
		"final output: Done: deleted 3 files")
	if _, err := os.Stat(filepath.Join(dir, "cleanup-1.json")); !os.IsNotExist(err) {
		t.Errorf("checkpoint still there after the run finished: %v", err)
	}
}

func TestRejectInASecondInvocation(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	dir := t.TempDir()
	invoke(t, "-dir", dir)
	contains(t, invoke(t, "-dir", dir, "-reject", "not today"),
		"tool_output       not today",
		"final output: I did not delete anything: not today")
}

func TestEditedCheckpointRefused(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	dir := t.TempDir()
	invoke(t, "-dir", dir)
	path := filepath.Join(dir, "cleanup-1.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, bytes.ReplaceAll(data, []byte("build-cache-*"), []byte("*")), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), &out, []string{"-dir", dir, "-approve"}); err == nil || !strings.Contains(err.Error(), "signature") {
		t.Fatalf("approving an edited checkpoint = %v, want a signature error", err)
	}
}

func TestApproveWithoutCheckpoint(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	var out bytes.Buffer
	if err := run(context.Background(), &out, []string{"-dir", t.TempDir(), "-approve"}); err == nil || !strings.Contains(err.Error(), "no checkpoint") {
		t.Fatalf("run = %v, want a no-checkpoint error", err)
	}
}
