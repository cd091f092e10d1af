package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

// The test checks the scripted model's output: never reach OpenAI from it.
func TestMain(m *testing.M) {
	os.Unsetenv("OPENAI_API_KEY")
	os.Exit(m.Run())
}

func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"customer: Ada Lovelace <ada@example.com>",
		"  3 × M4 bolts (box)",
		"  1 × torque wrench",
		"deliver by: 2026-03-14",
		"urgency: high",
		"2 lines for Ada Lovelace",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "streamed 0 text deltas") {
		t.Errorf("no text deltas streamed:\n%s", got)
	}
}
