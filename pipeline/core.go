package pipeline

import (
	"github.com/turnkit/turnkit/internal/key"
	"github.com/turnkit/turnkit/state"
)

// Core returns the core's own turn building for package pipelinetest:
// making a turn as the runner makes one, placing a model response as the
// core places one, and making the model call, run call and result the
// runner would make. With them pipelinetest builds its turns on the
// runner's code, so the two cannot drift.
//
// Core opens only to a key made by package internal/key, which no package
// outside this module can import, as [state.Core] does for the run's
// guarded operations; it panics on any other key (the zero one, which
// generic code can make without naming the type).
func Core(k key.Key) core {
	if !k.Valid() {
		panic("pipeline: Core opens only to internal/key's key")
	}
	return core{}
}

// core carries the core's turn building; its methods are typed, so a
// change of signature on either side fails to compile.
type core struct{}

// NewTurn returns the turn the runner would hand the turn stage before its
// inner stages ran. A non-nil emit makes the turn stream.
func (core) NewTurn(run *state.Run, agent *Agent, number int, emit func(Event)) *Turn {
	return &Turn{Run: run, Agent: agent, Number: number, emit: emit}
}

// PlaceResponse does with resp what the core does with a model stage's
// response: it places resp's items in t.Run (re-kinding handoff calls,
// reserving an output position per call, setting the response boundary),
// then sets t.Response, t.Calls, t.Results and what t.MayEndRun reports,
// as the tool stage sees them. It records no usage and emits no events.
func (core) PlaceResponse(t *Turn, resp *ModelResponse) error {
	b, err := placeResponse(t.Run, t.Agent, resp.Items, t.disabled)
	if err != nil {
		return err
	}
	t.Response, t.bound = resp, b
	layoutCalls(t)
	return nil
}

// NewModelCall returns the model call the runner would make for t, with
// the agent's static instructions.
func (core) NewModelCall(t *Turn) *ModelCall { return newModelCall(t, t.Agent.Instructions) }

// NewRunCall returns the request the runner hands the run stage. A non-nil
// emit makes the run stream.
func (core) NewRunCall(run *state.Run, agent *Agent, input []state.Item, emit func(Event)) *RunCall {
	return &RunCall{Run: run, Agent: agent, Input: input, emit: emit}
}

// NewResult returns the result of run, served last by agent, with the
// run's final output (if it finished) and its pending approvals as
// interruptions, and no new items.
func (core) NewResult(run *state.Run, agent *Agent) *Result {
	res := &Result{run: run, lastAgent: agent}
	if run != nil {
		res.finalOutput, _ = run.FinalOutput()
		res.interruptions = run.Pending()
	}
	return res
}
