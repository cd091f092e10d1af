package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// checkpointSizes returns the item counts of the checkpoint scenarios.
func checkpointSizes() []int { return []int{10, 100, 1_000} }

// runWithItems returns the state of a finished run of n items (n even,
// at least 4): a user message, (n-2)/2 tool turns and a final message, made
// by the Runner so that usage, boundaries and the completed-call ledger are
// those of a real run.
func runWithItems(tb testing.TB, n int) *state.Run {
	tb.Helper()
	turns := (n - 2) / 2
	agent := &pipeline.Agent{Name: "bench", Tools: []pipeline.Tool{trivialTool()}, Model: scripted.Generate(func(k int) scripted.Step {
		if k > turns {
			return replyStep
		}
		return callStep
	})}
	res, err := pipeline.NewRunner(pipeline.WithMaxTurns(turns+1)).Run(context.Background(), agent, pipeline.UserInput("go"), pipeline.WithRunID("bench"))
	if err != nil {
		tb.Fatal(err)
	}
	run := res.State()
	if run.Len() != n {
		tb.Fatalf("the run has %d items, want %d", run.Len(), n)
	}
	return run
}

// rawItems returns the items' canonical JSON.
func rawItems(run *state.Run) []json.RawMessage {
	var out []json.RawMessage
	for _, it := range run.Items().All() {
		out = append(out, it.Raw())
	}
	return out
}

// checkpointScenarios returns state.Marshal and state.Unmarshal of runs of
// 10, 100 and 1 000 items, each against encoding/json doing the floor of
// the same work: the items' JSON as an array of raw messages.
func checkpointScenarios() []Scenario {
	var out []Scenario
	for _, n := range checkpointSizes() {
		jsonEnc := fmt.Sprintf("checkpoint/json-encode/items=%d", n)
		jsonDec := fmt.Sprintf("checkpoint/json-decode/items=%d", n)
		out = append(out,
			Scenario{Name: jsonEnc, Group: "checkpoint", PerOp: 1, Unit: "op", Bench: func(b *testing.B) {
				raw := rawItems(runWithItems(b, n))
				b.ReportAllocs()
				var size int
				for b.Loop() {
					data, err := json.Marshal(raw)
					if err != nil {
						b.Fatal(err)
					}
					size = len(data)
				}
				b.ReportMetric(float64(size), "bytes")
			}},
			Scenario{Name: fmt.Sprintf("checkpoint/marshal/items=%d", n), Group: "checkpoint", Baseline: jsonEnc, PerOp: 1, Unit: "op", Bench: func(b *testing.B) {
				run := runWithItems(b, n)
				b.ReportAllocs()
				var size int
				for b.Loop() {
					data, err := state.Marshal(run)
					if err != nil {
						b.Fatal(err)
					}
					size = len(data)
				}
				b.ReportMetric(float64(size), "bytes")
			}},
			Scenario{Name: jsonDec, Group: "checkpoint", PerOp: 1, Unit: "op", Bench: func(b *testing.B) {
				data, err := json.Marshal(rawItems(runWithItems(b, n)))
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					var raw []json.RawMessage
					if err := json.Unmarshal(data, &raw); err != nil {
						b.Fatal(err)
					}
				}
			}},
			Scenario{Name: fmt.Sprintf("checkpoint/unmarshal/items=%d", n), Group: "checkpoint", Baseline: jsonDec, PerOp: 1, Unit: "op", Bench: func(b *testing.B) {
				data, err := state.Marshal(runWithItems(b, n))
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					run, err := state.Unmarshal(data)
					if err != nil {
						b.Fatal(err)
					}
					if run.Len() != n {
						b.Fatalf("unmarshalled %d items, want %d", run.Len(), n)
					}
				}
			}},
		)
	}
	return out
}

// approvalCycle times the approval cycle, one per iteration: a run whose
// only call needs approval pauses, its state is marshalled and unmarshalled
// (as by another process), the call is approved, and Resume runs the tool
// and the final turn.
func approvalCycle(b *testing.B) {
	ctx := context.Background()
	runner := pipeline.NewRunner(pipeline.WithMiddleware(approval.Require(approval.ByTool(toolName))))
	input := pipeline.UserInput("go")
	b.ReportAllocs()
	for b.Loop() {
		agent := &pipeline.Agent{Name: "bench", Tools: []pipeline.Tool{trivialTool()}, Model: scripted.New(callStep, replyStep)}
		res, err := runner.Run(ctx, agent, input)
		if err != nil {
			b.Fatal(err)
		}
		pending := res.Interruptions() // a copy: read it once
		if len(pending) != 1 {
			b.Fatalf("the run paused with %d interruptions, want 1", len(pending))
		}
		data, err := state.Marshal(res.State())
		if err != nil {
			b.Fatal(err)
		}
		run, err := state.Unmarshal(data)
		if err != nil {
			b.Fatal(err)
		}
		if err := run.Approve(pending[0].CallID); err != nil {
			b.Fatal(err)
		}
		if res, err = runner.Resume(ctx, agent, run); err != nil {
			b.Fatal(err)
		}
		if res.FinalOutput() != "done" {
			b.Fatalf("the resumed run ended with %q, want the final message", res.FinalOutput())
		}
	}
}

// plainTwoTurnRun times the same two turns with nothing gated: the
// approval cycle's baseline.
func plainTwoTurnRun(b *testing.B) {
	ctx := context.Background()
	runner := pipeline.NewRunner()
	input := pipeline.UserInput("go")
	b.ReportAllocs()
	for b.Loop() {
		agent := &pipeline.Agent{Name: "bench", Tools: []pipeline.Tool{trivialTool()}, Model: scripted.New(callStep, replyStep)}
		res, err := runner.Run(ctx, agent, input)
		if err != nil {
			b.Fatal(err)
		}
		if res.FinalOutput() != "done" {
			b.Fatalf("the run ended with %q, want the final message", res.FinalOutput())
		}
	}
}

// approvalScenarios returns the approval cycle against the same run with
// nothing gated.
func approvalScenarios() []Scenario {
	return []Scenario{
		{Name: "approval/plain-run", Group: "approval", PerOp: 1, Unit: "run", Bench: plainTwoTurnRun},
		{Name: "approval/cycle", Group: "approval", Baseline: "approval/plain-run", PerOp: 1, Unit: "cycle", Bench: approvalCycle},
	}
}
