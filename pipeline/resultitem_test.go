package pipeline_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// A call the core made makes the output item of a result once: persistence
// and the core both ask for it, and the second ask allocates nothing. A
// result whose output changed in between, or another result, gets an item
// of its own, and a ToolCall made outside the core works the same without
// remembering.
func TestResultItemMadeOncePerResult(t *testing.T) { // not parallel: AllocsPerRun
	check := func(what string, c *pipeline.ToolCall, got state.Item, want string) {
		t.Helper()
		if got.Kind() != state.KindToolOutput || got.Text() != want || got.Seq() != c.OutputSeq || got.CallID() != c.CallID {
			t.Errorf("%s: ResultItem = %v %q at %d for %q, want a tool output %q at %d for %q", what, got.Kind(), got.Text(), got.Seq(), got.CallID(), want, c.OutputSeq, c.CallID)
		}
	}
	asks := pipeline.Middleware{Name: "asks", Tool: func(next pipeline.ToolHandler) pipeline.ToolHandler {
		return pipeline.ToolHandlerFunc(func(ctx context.Context, c *pipeline.ToolCall) (*pipeline.ToolResult, error) {
			res, err := next.CallTool(ctx, c)
			if err != nil {
				return res, err
			}
			check("first", c, c.ResultItem(res), "ok")
			if !raceEnabled {
				if n := testing.AllocsPerRun(10, func() { check("again", c, c.ResultItem(res), "ok") }); n != 0 {
					t.Errorf("ResultItem of the same result again: %v allocations, want 0", n)
				}
			}
			other := &pipeline.ToolResult{Status: pipeline.ToolCompleted, Output: "other"}
			check("another result", c, c.ResultItem(other), "other")
			res.Output = "changed"
			check("changed output", c, c.ResultItem(res), "changed")
			return res, nil
		})
	}}
	echo := pipeline.NewTool(pipeline.ToolSpec{Name: "echo"}, func(context.Context, json.RawMessage) (string, error) { return "ok", nil })
	agent := &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{echo},
		Model: scripted.New(scripted.CallTool("echo", `{}`), scripted.Reply("done"))}
	res, err := pipeline.NewRunner(pipeline.WithMiddleware(asks)).Run(context.Background(), agent, pipeline.UserInput("go"))
	if err != nil {
		t.Fatal(err)
	}
	var outputs []string
	for _, it := range res.NewItems() {
		if it.Kind() == state.KindToolOutput {
			outputs = append(outputs, it.Text())
		}
	}
	if len(outputs) != 1 || outputs[0] != "changed" {
		t.Errorf("the run recorded outputs %q, want the changed one", outputs)
	}

	c := &pipeline.ToolCall{Item: state.ToolCall("fc_1", "call_1", "echo", `{}`).WithSeq(2), Name: "echo", CallID: "call_1", OutputSeq: 3}
	mine := &pipeline.ToolResult{Status: pipeline.ToolCompleted, Output: "ok"}
	check("a call made outside the core", c, c.ResultItem(mine), "ok")
	mine.Output = "changed"
	check("a call made outside the core, output changed", c, c.ResultItem(mine), "changed")
}

// A call held by a middleware through ToolCall.Pending waits for a
// decision: the run pauses with its approval, and holding a call the core
// made allocates nothing. A call made outside the core gets a pending
// result of its own.
func TestPendingHoldsTheCall(t *testing.T) { // not parallel: AllocsPerRun
	hold := pipeline.Middleware{Name: "hold", Tool: func(pipeline.ToolHandler) pipeline.ToolHandler {
		return pipeline.ToolHandlerFunc(func(_ context.Context, c *pipeline.ToolCall) (*pipeline.ToolResult, error) {
			if !raceEnabled {
				if n := testing.AllocsPerRun(10, func() { c.Pending() }); n != 0 {
					t.Errorf("Pending of a call the core made: %v allocations, want 0", n)
				}
			}
			return c.Pending(), nil
		})
	}}
	echo := pipeline.NewTool(pipeline.ToolSpec{Name: "echo"}, func(context.Context, json.RawMessage) (string, error) {
		t.Error("the held call ran")
		return "ok", nil
	})
	agent := &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{echo},
		Model: scripted.New(scripted.CallTool("echo", `{}`), scripted.Reply("done"))}
	res, err := pipeline.NewRunner(pipeline.WithMiddleware(hold)).Run(context.Background(), agent, pipeline.UserInput("go"))
	if err != nil {
		t.Fatal(err)
	}
	if p := res.Interruptions(); len(p) != 1 || p[0].Tool != "echo" {
		t.Errorf("the run paused with %+v, want the echo call waiting", p)
	}

	c := &pipeline.ToolCall{Item: state.ToolCall("fc_1", "call_1", "echo", `{}`).WithSeq(2), Name: "echo", CallID: "call_1", OutputSeq: 3}
	a, b := c.Pending(), c.Pending()
	if a.Status != pipeline.ToolPending || b.Status != pipeline.ToolPending || a == b {
		t.Errorf("Pending of a call made outside the core = %v, %v (same: %t), want two pending results", a.Status, b.Status, a == b)
	}
}
