package persistence_test

import (
	"context"
	"testing"

	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/pipeline/pipelinetest"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
)

// TestSessionIsAValidPrefixWhenEachToolStarts looks at the session from
// inside every tool as it starts, the moment a crash would freeze it: each
// view must be a valid prefix of the finished run (valid model input, the
// run's items in order, nothing before the last stored item missing but
// calls still waiting for their outputs).
func TestSessionIsAValidPrefixWhenEachToolStarts(t *testing.T) {
	t.Parallel()
	store := memory.New()
	t.Cleanup(func() { _ = store.Close() })
	var views [][]state.Item
	look := func(context.Context, *pipeline.ToolCall) { views = append(views, list(t, store)) }
	var runs pipelinetest.Ledger
	agent := &pipeline.Agent{
		Name: "a",
		Tools: []pipeline.Tool{
			echoTool("a", &runs, look), echoTool("b", &runs, look), echoTool("c", &runs, look), echoTool("d", &runs, look),
		},
		Model: scripted.New(
			scripted.Respond(scripted.Think("first"), scripted.Text("two calls"), scripted.Call("a", `{}`), scripted.Call("b", `{}`)),
			scripted.Respond(scripted.Think("second"), scripted.Call("c", `{}`), scripted.Text("and one more"), scripted.Call("d", `{}`)),
			scripted.Reply("done"),
		),
	}
	runner := pipeline.NewRunner(pipeline.WithToolConcurrency(1), pipeline.WithMiddleware(persistence.Middleware(store)))
	if _, err := runner.Run(context.Background(), agent, pipeline.UserInput("go"), pipeline.WithSessionID(sid)); err != nil {
		t.Fatal(err)
	}
	final := list(t, store)
	if len(views) != 4 {
		t.Fatalf("%d views, want one per tool", len(views))
	}
	for i, v := range views {
		if err := validPrefix(v, final); err != nil {
			t.Errorf("view %d %v: %v", i, show(v), err)
		}
		if i > 0 && len(v) <= len(views[i-1]) {
			t.Errorf("view %d %v does not grow on view %d %v", i, show(v), i-1, show(views[i-1]))
		}
	}
	// The view inside d holds c's pair and everything before it in order;
	// the message between c and d goes in with d.
	want := "[user:go reasoning:first msg:two calls call:a call:b out:a done out:b done reasoning:second call:c out:c done]"
	if got := showString(views[3]); got != want {
		t.Errorf("view inside d:\n got %s\nwant %s", got, want)
	}
}

func showString(items []state.Item) string {
	s := "["
	for i, x := range show(items) {
		if i > 0 {
			s += " "
		}
		s += x
	}
	return s + "]"
}
