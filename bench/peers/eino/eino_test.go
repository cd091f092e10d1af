package eino_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/cloudwego/eino/schema"

	"github.com/turnkit/turnkit/bench/peers/eino"
)

// TestRunMakesOneToolCallPerTurn checks that the scenario is the one turnkit
// runs: turns tool turns, then the final message.
func TestRunMakesOneToolCallPerTurn(t *testing.T) {
	for _, turns := range []int{1, 3, 10} {
		t.Run(strconv.Itoa(turns), func(t *testing.T) {
			ctx := context.Background()
			agent, err := eino.NewAgent(ctx, turns)
			if err != nil {
				t.Fatal(err)
			}
			if err := eino.Run(ctx, agent); err != nil {
				t.Fatal(err)
			}
			m := &eino.Model{Turns: turns}
			in := []*schema.Message{schema.UserMessage("go")}
			for range turns {
				out, err := m.Generate(ctx, in)
				if err != nil {
					t.Fatal(err)
				}
				if len(out.ToolCalls) != 1 {
					t.Fatalf("after %d messages the model made %d calls, want 1", len(in), len(out.ToolCalls))
				}
				in = append(in, out, schema.ToolMessage("ok", out.ToolCalls[0].ID))
			}
			if out, _ := m.Generate(ctx, in); out.Content != "done" || len(out.ToolCalls) != 0 {
				t.Fatalf("after %d turns the model answered %+v, want the final message", turns, out)
			}
		})
	}
}

func BenchmarkRun(b *testing.B) {
	for _, turns := range []int{10, 100, 1000} {
		b.Run("turns="+strconv.Itoa(turns), func(b *testing.B) { eino.Bench(b, turns) })
	}
}

// TestADKRunMakesOneToolCallPerTurn checks that the ADK agent runs the same
// scenario: turns tool results, then the final message.
func TestADKRunMakesOneToolCallPerTurn(t *testing.T) {
	for _, turns := range []int{1, 3, 10} {
		t.Run(strconv.Itoa(turns), func(t *testing.T) {
			ctx := context.Background()
			r, err := eino.NewADKRunner(ctx, turns)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 { // the runner is reused across runs, as in the benchmark
				run, err := eino.RunADK(ctx, r)
				if err != nil {
					t.Fatal(err)
				}
				if run.ToolOutputs != turns {
					t.Fatalf("the run produced %d tool results, want %d", run.ToolOutputs, turns)
				}
			}
		})
	}
}

func BenchmarkADKRun(b *testing.B) {
	for _, turns := range []int{10, 100, 1000} {
		b.Run("turns="+strconv.Itoa(turns), func(b *testing.B) { eino.BenchADK(b, turns) })
	}
}
