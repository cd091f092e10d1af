package pipeline_test

import (
	"testing"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// A call makes the output item of a result once: persistence and the core
// both ask for it, and the second ask allocates nothing. A result whose
// output changed in between, or another result, gets an item of its own.
func TestResultItemMadeOncePerResult(t *testing.T) { // not parallel: AllocsPerRun
	c := &pipeline.ToolCall{
		Item: state.ToolCall("fc_1", "call_1", "echo", `{}`).WithSeq(2), Name: "echo", CallID: "call_1", OutputSeq: 3,
	}
	res := &pipeline.ToolResult{Status: pipeline.ToolCompleted, Output: "ok"}
	check := func(what string, got state.Item, want string) {
		t.Helper()
		if got.Kind() != state.KindToolOutput || got.Text() != want || got.Seq() != 3 || got.CallID() != "call_1" {
			t.Errorf("%s: ResultItem = %v %q at %d for %q, want a tool output %q at 3 for call_1", what, got.Kind(), got.Text(), got.Seq(), got.CallID(), want)
		}
	}
	check("first", c.ResultItem(res), "ok")
	if !raceEnabled {
		if n := testing.AllocsPerRun(10, func() { check("again", c.ResultItem(res), "ok") }); n != 0 {
			t.Errorf("ResultItem of the same result again: %v allocations, want 0", n)
		}
	}
	res.Output = "changed"
	check("changed output", c.ResultItem(res), "changed")
	check("another result", c.ResultItem(&pipeline.ToolResult{Status: pipeline.ToolCompleted, Output: "other"}), "other")
	parts := []state.ContentPart{state.TextPart("text")}
	if got := c.ResultItem(&pipeline.ToolResult{Status: pipeline.ToolCompleted, Output: "other", Content: parts}); len(got.Content()) != 1 {
		t.Errorf("ResultItem of a result with content parts = %d parts, want 1", len(got.Content()))
	}
}
