package deferred_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool/deferred"
)

func numbered(n int, runs *atomic.Int32) []pipeline.Tool {
	out := make([]pipeline.Tool, n)
	for i := range out {
		name := fmt.Sprintf("tool_%d", i)
		out[i] = pipeline.NewTool(pipeline.ToolSpec{Name: name, Description: "Does thing " + name + ".\nMore detail."},
			func(context.Context, json.RawMessage) (string, error) {
				runs.Add(1)
				return "did " + name, nil
			})
	}
	return out
}

// The model sees the search tool, whose description lists the deferred
// tools, and none of their definitions; once it loaded two of them, the
// next calls offer those two in full, and it calls one.
func TestLoadOnDemand(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	set := deferred.New(numbered(5, &runs)...)
	always := pipeline.NewTool(pipeline.ToolSpec{Name: "always"}, func(context.Context, json.RawMessage) (string, error) { return "ok", nil })
	m := scripted.New(
		scripted.CallTool(deferred.SearchToolName, `{"names":["tool_3","tool_1","nope"]}`),
		scripted.CallTool("tool_3", `{}`),
		scripted.Reply("done"),
	)
	agent := &pipeline.Agent{Name: "a", Model: m, Tools: append([]pipeline.Tool{always}, set.Tools()...)}
	res, err := pipeline.NewRunner(pipeline.WithMiddleware(set.Middleware())).Run(context.Background(), agent, pipeline.UserInput("go"))
	if err != nil || res.FinalOutput() != "done" {
		t.Fatalf("run = %q, %v", res.FinalOutput(), err)
	}
	var offered [][]string
	for _, c := range m.Calls() {
		offered = append(offered, c.Tools)
	}
	want := [][]string{
		{"always", deferred.SearchToolName},
		{"always", deferred.SearchToolName, "tool_1", "tool_3"},
		{"always", deferred.SearchToolName, "tool_1", "tool_3"},
	}
	if diff := cmp.Diff(want, offered); diff != "" {
		t.Errorf("tools offered per call (-want +got):\n%s", diff)
	}
	if got := res.NewItems()[2].Text(); got != "Loaded: tool_3, tool_1. You can call them now. Unknown: nope." {
		t.Errorf("search output = %q", got)
	}
	if runs.Load() != 1 {
		t.Errorf("deferred tools ran %d times, want 1", runs.Load())
	}
	desc := set.Tools()[0].Spec().Description
	for _, line := range []string{"- tool_0: Does thing tool_0.", "- tool_4: Does thing tool_4."} {
		if !strings.Contains(desc, line) {
			t.Errorf("search description lacks %q:\n%s", line, desc)
		}
	}
	if strings.Contains(desc, "More detail") {
		t.Errorf("search description holds more than each tool's first line:\n%s", desc)
	}
}

// What a run loaded is in its state: a run resumed from its checkpoint
// keeps offering it.
func TestLoadedSurvivesCheckpoint(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	set := deferred.New(numbered(3, &runs)...)
	pausing := pipeline.NewTool(pipeline.ToolSpec{Name: "ask"}, func(context.Context, json.RawMessage) (string, error) {
		return "", pipeline.ErrToolPending
	})
	m := scripted.New(
		scripted.CallTool(deferred.SearchToolName, `{"names":["tool_2"]}`),
		scripted.CallTool("ask", `{}`),
		scripted.Reply("done"),
	)
	agent := &pipeline.Agent{Name: "a", Model: m, Tools: append([]pipeline.Tool{pausing}, set.Tools()...)}
	runner := pipeline.NewRunner(pipeline.WithMiddleware(set.Middleware()))
	res, err := runner.Run(context.Background(), agent, pipeline.UserInput("go"))
	if err != nil || !res.Interrupted() {
		t.Fatalf("run = %v, %v; want a pause", res, err)
	}
	data, err := state.Marshal(res.State())
	if err != nil {
		t.Fatal(err)
	}
	run, err := state.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Reject(run.Pending()[0].CallID, "no"); err != nil {
		t.Fatal(err)
	}
	if _, err := runner.Resume(context.Background(), agent, run); err != nil {
		t.Fatal(err)
	}
	calls := m.Calls()
	if got := calls[len(calls)-1].Tools; !cmp.Equal(got, []string{"ask", deferred.SearchToolName, "tool_2"}) {
		t.Errorf("the resumed run offered %v", got)
	}
}
