package tracing_test

import (
	"context"
	"testing"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// TestContinuationLostAttribute: a model call whose stored response was
// gone (the adapter sent the whole input again) says so on its span.
func TestContinuationLostAttribute(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	m := pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
		return &pipeline.ModelResponse{ID: "resp_2", Items: []state.Item{state.AssistantMessage("", "ok")}, ContinuationLost: "resp_1"}, nil
	})
	r := pipeline.NewRunner(pipeline.WithMiddleware(h.middleware()))
	if _, err := r.Run(context.Background(), &pipeline.Agent{Name: "a", Model: m}, pipeline.UserInput("hi")); err != nil {
		t.Fatal(err)
	}
	chat := find(h.ended(), "chat")
	if len(chat) != 1 {
		t.Fatalf("%d chat spans, want 1", len(chat))
	}
	if got := attrs(chat[0].Attributes())["turnkit.continuation.lost"]; got != "resp_1" {
		t.Fatalf("turnkit.continuation.lost = %q, want resp_1", got)
	}
}
