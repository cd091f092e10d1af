package persistence_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/pipeline/pipelinetest"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
)

// holdInput is a run stage that holds the run's input for a ruling, as an
// input guardrail with DropBlockedInput does.
var holdInput = pipeline.Middleware{Name: "hold", Run: func(next pipeline.RunHandler) pipeline.RunHandler {
	return pipeline.RunHandlerFunc(func(ctx context.Context, c *pipeline.RunCall) (*pipeline.Result, error) {
		ctx, _ = pipeline.HoldInput(ctx)
		return next.ServeRun(ctx, c)
	})
}}

func kinds(items []state.Item) string {
	var b strings.Builder
	for _, it := range items {
		b.WriteString(it.Kind().String() + " ")
	}
	return strings.TrimSpace(b.String())
}

// TestHeldInputStoredBeforeTools: an input held for a ruling that never
// comes (the checks passed) is stored when the model stage returns, so a
// tool's commit finds it already in the session: the session stays a
// valid prefix of the run.
func TestHeldInputStoredBeforeTools(t *testing.T) {
	t.Parallel()
	store := memory.New()
	var during []state.Item
	look := echoTool("look", &pipelinetest.Ledger{}, func(ctx context.Context, c *pipeline.ToolCall) {
		during, _ = store.List(ctx, sid, 0)
	})
	agent := &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{look},
		Model: scripted.New(scripted.CallTool("look", `{}`), scripted.Reply("done"))}
	r := pipeline.NewRunner(pipeline.WithMiddleware(holdInput, persistence.Middleware(store)))
	if _, err := r.Run(context.Background(), agent, pipeline.UserInput("hi"), pipeline.WithSessionID(sid)); err != nil {
		t.Fatal(err)
	}
	if got := kinds(during); got != "user_message" {
		t.Errorf("while the tool ran the session held %q, want the input alone", got)
	}
	all, _ := store.List(context.Background(), sid, 0)
	if got := kinds(all); got != "user_message tool_call tool_output assistant_message" {
		t.Errorf("session holds %q", got)
	}
}

// TestHeldInputStoredOnModelError: a held input without a ruling is kept
// when the model fails, as the default keeps it.
func TestHeldInputStoredOnModelError(t *testing.T) {
	t.Parallel()
	store := memory.New()
	boom := errors.New("model down")
	agent := &pipeline.Agent{Name: "a", Model: scripted.New(scripted.Fail(boom))}
	r := pipeline.NewRunner(pipeline.WithMiddleware(holdInput, persistence.Middleware(store)))
	if _, err := r.Run(context.Background(), agent, pipeline.UserInput("hi"), pipeline.WithSessionID(sid)); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the model's", err)
	}
	all, _ := store.List(context.Background(), sid, 0)
	if got := kinds(all); got != "user_message" {
		t.Errorf("session holds %q, want the input", got)
	}
}
