package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "") // the scripted model: the output is known
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"(cancel_order B-4, idempotency key first-1/call_first-1_1_2)",
		"4 tool_output track_order An error occurred while running the tool. Please try again. Error: the carrier's tracking service is down",
		"5 tool_output cancel_order order B-4 cancelled",
		"final output: Order B-4 is cancelled.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}
