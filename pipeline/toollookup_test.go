package pipeline_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
)

// specCounter is a tool that counts how often it is asked for its spec.
type specCounter struct {
	pipeline.Tool
	specs *atomic.Int64
}

func (s specCounter) Spec() pipeline.ToolSpec {
	s.specs.Add(1)
	return s.Tool.Spec()
}

// TestToolSpecsReadOncePerRun: the runner asks each tool for its spec once
// per agent per run, and finds the tool a call names among those specs;
// it does not ask the tools again on every call.
func TestToolSpecsReadOncePerRun(t *testing.T) {
	t.Parallel()
	var specs [2]atomic.Int64
	tool := func(name string, n *atomic.Int64) pipeline.Tool {
		return specCounter{Tool: pipeline.NewTool(pipeline.ToolSpec{Name: name},
			func(context.Context, json.RawMessage) (string, error) { return "ok", nil }), specs: n}
	}
	const turns = 3
	agent := &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{tool("first", &specs[0]), tool("second", &specs[1])},
		Model: scripted.Generate(func(n int) scripted.Step {
			if n > turns {
				return scripted.Reply("done")
			}
			return scripted.CallTool("second", `{}`)
		})}
	res, err := pipeline.NewRunner().Run(context.Background(), agent, pipeline.UserInput("go"))
	if err != nil {
		t.Fatal(err)
	}
	if res.FinalOutput() != "done" {
		t.Fatalf("final output %q, want done", res.FinalOutput())
	}
	for i, n := range []string{"first", "second"} {
		if got := specs[i].Load(); got != 1 {
			t.Errorf("tool %q: asked for its spec %d times over %d calls, want once", n, got, turns)
		}
	}
}
