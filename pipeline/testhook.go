package pipeline

import (
	"github.com/turnkit/turnkit/pipeline/internal/testhook"
	"github.com/turnkit/turnkit/state"
)

// init hands package pipelinetest the core's own turn making, response
// placing, model call making and run results (see package testhook), so
// its turns are built by the code that builds the runner's.
func init() {
	testhook.NewTurn = func(run *state.Run, agent *Agent, number int, emit func(Event)) *Turn {
		return &Turn{Run: run, Agent: agent, Number: number, emit: emit}
	}
	testhook.PlaceResponse = func(t *Turn, resp *ModelResponse) error {
		if err := placeResponse(t.Run, t.Agent, resp.Items, t.disabled); err != nil {
			return err
		}
		t.Response = resp
		layoutCalls(t)
		return nil
	}
	testhook.NewModelCall = func(t *Turn) *ModelCall { return newModelCall(t, t.Agent.Instructions) }
	testhook.NewRunCall = func(run *state.Run, agent *Agent, input []state.Item, emit func(Event)) *RunCall {
		return &RunCall{Run: run, Agent: agent, Input: input, emit: emit}
	}
	testhook.NewResult = func(run *state.Run, agent *Agent) *Result {
		res := &Result{run: run, lastAgent: agent}
		if run != nil {
			res.finalOutput, _ = run.FinalOutput()
			res.interruptions = run.Pending()
		}
		return res
	}
}
