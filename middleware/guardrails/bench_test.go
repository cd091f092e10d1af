package guardrails_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/turnkit/turnkit/middleware/guardrails"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

var sinkResult *pipeline.Result

// BenchmarkGuardrails measures what each kind of guardrail adds to a run of
// two turns (a tool call, then a final message) with a check that returns
// at once. Compare each line with "bare" from the same run: the difference
// is the guardrail's cost (input guardrails run on one turn per run, output
// guardrails on the final turn, tool guardrails on each call).
func BenchmarkGuardrails(b *testing.B) {
	input := func(context.Context, *pipeline.Agent, []state.Item) (guardrails.Verdict, error) {
		return guardrails.Verdict{}, nil
	}
	output := func(context.Context, *pipeline.Agent, string) (guardrails.Verdict, error) {
		return guardrails.Verdict{}, nil
	}
	toolIn := func(context.Context, *pipeline.Agent, *pipeline.ToolCall) (guardrails.Verdict, error) {
		return guardrails.Verdict{}, nil
	}
	toolOut := func(context.Context, *pipeline.Agent, pipeline.ToolOutcome) (guardrails.Verdict, error) {
		return guardrails.Verdict{}, nil
	}
	benchmarks := []struct {
		name string
		mws  []pipeline.Middleware
	}{
		{name: "bare"},
		{name: "input", mws: []pipeline.Middleware{guardrails.Input(input)}},
		{name: "input_parallel", mws: []pipeline.Middleware{guardrails.Input(input, guardrails.WithParallel())}},
		{name: "output", mws: []pipeline.Middleware{guardrails.Output(output)}},
		{name: "output_3_checks", mws: []pipeline.Middleware{guardrails.Output(output,
			guardrails.WithCheck("b", guardrails.Check[string](output)), guardrails.WithCheck("c", guardrails.Check[string](output)))}},
		{name: "tool_input", mws: []pipeline.Middleware{guardrails.ToolInput(toolIn)}},
		{name: "tool_output", mws: []pipeline.Middleware{guardrails.ToolOutput(toolOut)}},
		{name: "all_four", mws: []pipeline.Middleware{
			guardrails.Input(input), guardrails.Output(output), guardrails.ToolInput(toolIn), guardrails.ToolOutput(toolOut),
		}},
	}
	echo := pipeline.NewTool(pipeline.ToolSpec{Name: "echo"}, func(context.Context, json.RawMessage) (string, error) {
		return "ok", nil
	})
	for _, bm := range benchmarks {
		b.Run(bm.name, func(b *testing.B) {
			steps := [2]scripted.Step{scripted.CallTool("echo", "{}"), scripted.Reply("done")}
			agent := &pipeline.Agent{
				Name:  "agent",
				Model: scripted.Generate(func(n int) scripted.Step { return steps[(n-1)%2] }),
				Tools: []pipeline.Tool{echo},
			}
			r := pipeline.NewRunner(pipeline.WithMiddleware(bm.mws...), pipeline.WithIDGenerator(func() string { return "run" }))
			input := pipeline.UserInput("hi")
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				res, err := r.Run(ctx, agent, input)
				if err != nil {
					b.Fatal(err)
				}
				sinkResult = res
			}
		})
	}
}
