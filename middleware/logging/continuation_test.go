package logging_test

import (
	"context"
	"testing"

	"go.uber.org/zap/zapcore"

	"github.com/turnkit/turnkit/middleware/logging"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// TestContinuationLostField: a model call whose stored response was gone
// (the adapter sent the whole input again) says so in its log entry.
func TestContinuationLostField(t *testing.T) {
	t.Parallel()
	log, logs := observe(zapcore.DebugLevel)
	m := pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
		return &pipeline.ModelResponse{ID: "resp_2", Items: []state.Item{state.AssistantMessage("", "ok")}, ContinuationLost: "resp_1"}, nil
	})
	r := pipeline.NewRunner(pipeline.WithMiddleware(logging.Middleware(log)))
	if _, err := r.Run(context.Background(), &pipeline.Agent{Name: "a", Model: m}, pipeline.UserInput("hi")); err != nil {
		t.Fatal(err)
	}
	calls := logs.FilterMessage("model call").All()
	if len(calls) != 1 {
		t.Fatalf("%d model call entries, want 1", len(calls))
	}
	if got := calls[0].ContextMap()["continuation_lost"]; got != "resp_1" {
		t.Fatalf("continuation_lost = %v, want resp_1", got)
	}
}
