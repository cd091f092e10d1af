package pipeline_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
)

// alwaysOn is a tool with a condition that always holds.
type alwaysOn struct{ pipeline.Tool }

func (alwaysOn) Condition() pipeline.Condition {
	return func(context.Context, *pipeline.Turn) bool { return true }
}

// turnAllocs returns the allocations per turn of runs on a runner made
// with opts, the tool wrapped by wrap: the difference between a run of 20
// tool turns and one of 10, divided by 10, so that what a run allocates
// once does not count.
func turnAllocs(t *testing.T, wrap func(pipeline.Tool) pipeline.Tool, opts ...pipeline.Option) float64 {
	t.Helper()
	return (runAllocs(t, 20, wrap, opts...) - runAllocs(t, 10, wrap, opts...)) / 10
}

// runAllocs returns the allocations of a run of turns tool turns and a
// final message.
func runAllocs(t *testing.T, turns int, wrap func(pipeline.Tool) pipeline.Tool, opts ...pipeline.Option) float64 {
	t.Helper()
	echo := pipeline.NewTool(pipeline.ToolSpec{Name: "echo"}, func(context.Context, json.RawMessage) (string, error) { return "ok", nil })
	runner := pipeline.NewRunner(append(opts, pipeline.WithMaxTurns(turns+1))...)
	return testing.AllocsPerRun(20, func() {
		m := scripted.Generate(func(n int) scripted.Step {
			if n > turns {
				return scripted.Reply("done")
			}
			return scripted.CallTool("echo", `{}`)
		})
		agent := &pipeline.Agent{Name: "a", Model: m, Tools: []pipeline.Tool{wrap(echo)}}
		if _, err := runner.Run(context.Background(), agent, pipeline.UserInput("go")); err != nil {
			t.Fatal(err)
		}
	})
}

// Policies configured but not triggered cost no allocation per turn: a
// tool condition that holds, a token budget not reached, a tool choice
// left to the model. (A cost budget records the cost, a tool timeout
// makes a context per call: bench's BenchmarkPolicies counts those.)
func TestUntriggeredPoliciesAllocateNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	same := func(tl pipeline.Tool) pipeline.Tool { return tl }
	base := turnAllocs(t, same)
	for name, got := range map[string]float64{
		"condition":    turnAllocs(t, func(tl pipeline.Tool) pipeline.Tool { return alwaysOn{tl} }),
		"token budget": turnAllocs(t, same, pipeline.WithBudget(pipeline.Budget{InputTokens: 1 << 40, OutputTokens: 1 << 40})),
	} {
		if got != base {
			t.Errorf("%s: %v allocations per turn, want %v as without it", name, got, base)
		}
	}
}
