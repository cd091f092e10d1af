package pipeline_test

import (
	"testing"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/pipeline/pipelinetest"
	"github.com/turnkit/turnkit/state"
)

// TestApplyNext tests the hook middleware/checkpoint uses instead of the
// core's operations: it applies a final output or a handoff to the run
// ahead of the runner, and undo takes it back.
func TestApplyNext(t *testing.T) {
	t.Run("final output", func(t *testing.T) {
		turn := pipelinetest.NewTurn(t, pipelinetest.WithResponse(state.AssistantMessage("msg_1", "done")))
		turn.Next = pipeline.NextStep{Kind: pipeline.NextFinalOutput, Output: "done"}
		undo := turn.ApplyNext()
		if out, ok := turn.Run.FinalOutput(); !ok || out != "done" {
			t.Fatalf("after ApplyNext: FinalOutput() = %q, %v; want \"done\", true", out, ok)
		}
		undo()
		if out, ok := turn.Run.FinalOutput(); ok || out != "" {
			t.Fatalf("after undo: FinalOutput() = %q, %v; want unfinished", out, ok)
		}
	})
	t.Run("handoff", func(t *testing.T) {
		billing := &pipeline.Agent{Name: "billing"}
		turn := pipelinetest.NewTurn(t, pipelinetest.WithAgent(&pipeline.Agent{Name: "triage", Handoffs: []pipeline.Handoff{{Agent: billing}}}))
		turn.Next = pipeline.NextStep{Kind: pipeline.NextHandoff, Agent: billing}
		undo := turn.ApplyNext()
		if got := turn.Run.Agent(); got != "billing" {
			t.Fatalf("after ApplyNext: Agent() = %q, want billing", got)
		}
		undo()
		if got := turn.Run.Agent(); got != "triage" {
			t.Fatalf("after undo: Agent() = %q, want triage", got)
		}
	})
	t.Run("run again changes nothing", func(t *testing.T) {
		turn := pipelinetest.NewTurn(t)
		turn.Next = pipeline.NextStep{Kind: pipeline.NextRunAgain}
		turn.ApplyNext()()
		if _, ok := turn.Run.FinalOutput(); ok || turn.Run.Agent() != "agent" {
			t.Fatalf("run again moved the run: agent %q", turn.Run.Agent())
		}
	})
}
