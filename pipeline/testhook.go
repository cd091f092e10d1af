package pipeline

import (
	"github.com/turnkit/turnkit/pipeline/internal/testhook"
	"github.com/turnkit/turnkit/state"
)

// init hands package pipelinetest the core's own turn making, response
// placing and model call making (see package testhook), so its turns are
// built by the code that builds the runner's.
func init() {
	testhook.NewTurn = func(run *state.Run, agent *Agent, number int, emit func(Event)) *Turn {
		return &Turn{Run: run, Agent: agent, Number: number, emit: emit}
	}
	testhook.PlaceResponse = func(t *Turn, resp *ModelResponse) error {
		if err := placeResponse(t.Run, t.Agent, resp.Items); err != nil {
			return err
		}
		t.Response = resp
		layoutCalls(t)
		return nil
	}
	testhook.NewModelCall = func(t *Turn) *ModelCall { return newModelCall(t, t.Agent.Instructions) }
}
