package pipeline

import "github.com/turnkit/turnkit/state"

// NewTestTurn returns a turn of run, served by agent and numbered number,
// as the runner would hand it to the turn stage before the inner stages
// ran. When emit is non-nil the turn streams and [Turn.Emit] calls it.
// mayEndRun is what [Turn.MayEndRun] reports, which the core computes
// once the model stage returned.
//
// It exists for tests of middleware (package pipelinetest builds on it);
// the runner makes its own turns.
func NewTestTurn(run *state.Run, agent *Agent, number int, emit func(Event), mayEndRun bool) *Turn {
	return &Turn{Run: run, Agent: agent, Number: number, emit: emit, ends: mayEndRun}
}

// NewTestModelCall returns the model call the runner would make for t: the
// agent's instructions, the run's model input, the agent's tools and
// handoffs, its settings, and the turn's event sink. It is for tests of
// middleware.
func NewTestModelCall(t *Turn) *ModelCall {
	a := t.Agent
	return &ModelCall{
		Turn: t, Agent: a, Instructions: a.Instructions, Input: t.Run.ModelInput(),
		Tools: toolSpecs(a), Settings: a.Settings, Stream: t.emit != nil, emit: t.emit,
	}
}
