package approval_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

var sinkResult *pipeline.Result

// BenchmarkApprovalCycle measures one full cycle on a run that starts
// from n items of history: run to the pause → state.Marshal →
// state.Unmarshal → approve → resume to the final output.
func BenchmarkApprovalCycle(b *testing.B) {
	model := pipeline.ModelFunc(func(_ context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
		if c.Input.At(c.Input.Len()-1).Kind() == state.KindToolOutput {
			return &pipeline.ModelResponse{Items: []state.Item{state.AssistantMessage("m", "done")}}, nil
		}
		return &pipeline.ModelResponse{Items: []state.Item{state.ToolCall("fc", "call_1", "danger", `{"path":"/tmp/x"}`)}}, nil
	})
	danger := pipeline.NewTool(pipeline.ToolSpec{Name: "danger"}, func(context.Context, json.RawMessage) (string, error) { return "ok", nil })
	agent := &pipeline.Agent{Name: "a", Model: model, Tools: []pipeline.Tool{danger}}
	runner := pipeline.NewRunner(pipeline.WithMiddleware(approval.Require(approval.ByTool("danger"))))
	ctx := context.Background()
	for _, n := range []int{10, 100} {
		b.Run(fmt.Sprintf("history=%d", n), func(b *testing.B) {
			hist := make([]state.Item, n)
			for i := range hist {
				if i%2 == 0 {
					hist[i] = state.UserMessage(fmt.Sprintf("question %d about the files", i)).WithSeq(int64(i + 1))
				} else {
					hist[i] = state.AssistantMessage("m", fmt.Sprintf("answer %d with some detail", i)).WithSeq(int64(i + 1))
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				run := state.NewRun("run_bench", agent.Name)
				runcore.SetHistory(run, hist)
				res, err := runner.Run(ctx, agent, pipeline.UserInput("clean up"), pipeline.WithState(run))
				if err != nil || !res.Interrupted() {
					b.Fatalf("run: %v (interrupted %v)", err, res.Interrupted())
				}
				data, err := state.Marshal(run)
				if err != nil {
					b.Fatal(err)
				}
				restored, err := state.Unmarshal(data)
				if err != nil {
					b.Fatal(err)
				}
				if err := restored.Approve("call_1"); err != nil {
					b.Fatal(err)
				}
				if sinkResult, err = runner.Resume(ctx, agent, restored); err != nil || sinkResult.FinalOutput() != "done" {
					b.Fatalf("resume: %v", err)
				}
			}
		})
	}
}
