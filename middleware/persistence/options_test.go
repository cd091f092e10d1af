package persistence_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/pipeline/pipelinetest"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
)

// TestHistoryLimitAndMerge checks what the model sees on a run's first
// turn: the session cut to the limit without an output orphaned from its
// call, then what the merge callback made of it, then the input.
func TestHistoryLimitAndMerge(t *testing.T) {
	t.Parallel()
	dropUsers := func(_ context.Context, hist, _ []state.Item) ([]state.Item, error) {
		var out []state.Item
		for _, it := range hist {
			if it.Kind() != state.KindUserMessage {
				out = append(out, it)
			}
		}
		return out, nil
	}
	tests := []struct {
		name string
		opts []persistence.Option
		want []string
	}{
		{name: "whole session", want: []string{"user:weather?", "call:weather", "out:weather done", "msg:sunny", "user:again"}},
		{name: "limit cuts a call from its output", opts: []persistence.Option{persistence.WithLimit(2)}, want: []string{"msg:sunny", "user:again"}},
		{name: "limit keeps the pair", opts: []persistence.Option{persistence.WithLimit(3)}, want: []string{"call:weather", "out:weather done", "msg:sunny", "user:again"}},
		{name: "merge", opts: []persistence.Option{persistence.WithMerge(dropUsers)}, want: []string{"call:weather", "out:weather done", "msg:sunny", "user:again"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := memory.New()
			t.Cleanup(func() { _ = store.Close() })
			var runs pipelinetest.Ledger
			model := scripted.New(scripted.CallTool("weather", `{}`), scripted.Reply("sunny"), scripted.Reply("still sunny"))
			agent := &pipeline.Agent{Name: "a", Model: model, Tools: []pipeline.Tool{echoTool("weather", &runs, nil)}}
			ctx := context.Background()
			first := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store)))
			if _, err := first.Run(ctx, agent, pipeline.UserInput("weather?"), pipeline.WithSessionID(sid)); err != nil {
				t.Fatal(err)
			}
			second := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store, tt.opts...)))
			if _, err := second.Run(ctx, agent, pipeline.UserInput("again"), pipeline.WithSessionID(sid)); err != nil {
				t.Fatal(err)
			}
			calls := model.Calls()
			if d := cmp.Diff(tt.want, show(calls[len(calls)-1].Input.Slice())); d != "" {
				t.Errorf("model input (-want +got):\n%s", d)
			}
		})
	}
}
