package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

// TestMain makes the test binary the worker when crashEnv is set, as the
// program makes itself.
func TestMain(m *testing.M) {
	if dir := os.Getenv(crashEnv); dir != "" {
		if err := worker(context.Background(), dir); err != nil {
			os.Stderr.WriteString("worker: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Unsetenv("OPENAI_API_KEY") // the scripted model: the output is known
	os.Exit(m.Run())
}

func TestCrashAndResume(t *testing.T) {
	dir := t.TempDir()
	if err := crashWorker(os.Args[0], dir); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := recoverRun(context.Background(), &out, dir); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"resumed: Charged 12.50 EUR; your receipt is on its way.",
		"2 tool_call {\"cents\":1250}",
		"3 tool_output receipt R-1",
		"payment service: key order-17/call_order-17_1_1 asked 2 times, charged once",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "saves made in one transaction with their append: 0") {
		t.Errorf("no save was made in one transaction with its append:\n%s", got)
	}
}
