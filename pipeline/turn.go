package pipeline

import (
	"strconv"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/state"
)

// A Turn is one step of a run: a model call, the tool calls it asked for,
// and the decision about what comes next. The runner hands a Turn down the
// chain for each step; it is valid only while the chain serves it, and
// middleware must not keep it afterwards: the runner clears it and serves
// the run's next step with it, and so with its calls and their results.
//
// Fields set by the core (Response, Calls, Results, Next) are filled in as
// the inner stages run: a Turn middleware sees them after calling next.
type Turn struct {
	// Run is the run's state; its items are the run's durable record.
	Run *state.Run
	// Agent is the agent serving this turn.
	Agent *Agent
	// Number is the turn's number in the run, from 1.
	Number int
	// Resumed reports a turn that continues a paused response: it has no
	// model call, and runs the calls that were waiting for a decision.
	Resumed bool
	// Input holds the run's input items placed on this turn: the user's
	// input on a run's first turn, nil otherwise.
	Input []state.Item
	// Response is the model's response, with positions, once the model stage
	// returned (on a resumed turn, the paused response rebuilt from the run).
	Response *ModelResponse
	// Calls are the response's tool calls in call order, and Results their
	// results, index by index, once the tool stage returned. Handoff calls
	// are not among them.
	Calls   []*ToolCall
	Results []*ToolResult
	// Next says what comes after this turn.
	Next NextStep

	emit     func(Event) // the run's event sink; nil if the run does not stream
	ends     bool
	res      *Result         // the run's result, which reads its new items from the run (see record)
	tools    []ToolSpec      // the agent's tool specs, built once per agent per run
	conds    []toolCondition // the conditions of its tools and handoffs (condition.go)
	disabled []string        // the tools and handoffs disabled on this turn
	spent    *spend          // the run's cost so far, with a cost budget (budget.go)
	runner   *Runner         // the runner serving the turn, for agents used as tools
	model    ModelCall       // the turn's model call (Runner.callModel)
	bound    state.Boundary  // where the response was placed: its items', then its outputs' positions
	// The first call with its state, and the one-element backings of
	// Calls and Results: a turn of one call, the common case, allocates
	// nothing more for them (layoutCalls).
	call0   ToolCall
	own0    callState
	calls1  [1]*ToolCall
	result1 [1]*ToolResult
}

// reset clears every field of t, a turn that served an earlier one,
// except the core's room for the turn's model call and its first tool
// call (model, call0, own0, calls1 and result1), which the core
// overwrites whole before it uses them (callModel; layoutCalls, once
// Calls is nil again). Clearing the Turn whole cleared that room too,
// 776 of its 1 072 bytes, with their write barriers while the collector
// runs. TestTurnResetCoversEveryField fails when Turn gains a field that
// reset does not clear.
func (t *Turn) reset() {
	t.Run, t.Agent, t.Number, t.Resumed, t.Input = nil, nil, 0, false, nil
	t.Response, t.Calls, t.Results, t.Next = nil, nil, nil, NextStep{}
	t.emit, t.ends, t.res, t.tools, t.conds = nil, false, nil, nil, nil
	t.disabled, t.spent, t.runner, t.bound = nil, nil, nil, state.Boundary{}
}

// tool returns the tool of the turn's agent named name, as [Agent.tool]
// does. While the turn offers all the agent's tools (no condition
// disabled one), it finds the name among the turn's specs, built once per
// agent per run in the order of the agent's tools, rather than asking
// each tool for its spec (a copy of 112 bytes through an interface, for
// each tool before the one named, on every call).
func (t *Turn) tool(name string) Tool {
	a := t.Agent
	if len(t.tools) != len(a.Tools)+len(a.Handoffs) {
		return a.tool(name)
	}
	for i := range a.Tools {
		if t.tools[i].Name == name {
			return a.Tools[i]
		}
	}
	if _, _, ok := state.SplitMCPApprovalName(name); ok {
		return a.tool(name) // an approval request goes to its server's tool
	}
	return nil
}

// Emit sends an event to the run's stream, if the run streams. It is safe
// for concurrent use.
func (t *Turn) Emit(ev Event) {
	if t.emit != nil {
		t.emit(ev)
	}
}

// record notes an item the core recorded for the result's new items. The
// result reads the items at positions from its start on from the run, so
// only an item recorded below them (an output a resumed turn gave a call of
// the paused response) is kept.
func (t *Turn) record(it state.Item) {
	if t.res != nil && it.Seq() < t.res.since {
		t.res.early = append(t.res.early, it)
	}
}

// Streaming reports whether the run streams events.
func (t *Turn) Streaming() bool { return t.emit != nil }

// MayEndRun reports whether the turn's response can end the run: it has no
// tool or handoff calls (its messages are the final output), or one of its
// calls is terminal. Persistence holds the model output of such a turn
// until the output guardrails passed. It is known once the model stage
// returned.
func (t *Turn) MayEndRun() bool { return t.ends }

// ApplyNext applies the turn's next step to its run now, ahead of the
// runner: a final output finishes the run (its [state.Run.FinalOutput]
// reports it) and a handoff makes the target agent the run's current one.
// Other steps change nothing. The runner applies [Turn.Next] itself once the
// turn stage returned, so middleware rarely needs this: it is for a turn
// middleware whose save of the run must already carry the turn's outcome,
// as middleware/checkpoint's save with a turn's commit does, so that a
// crash after the commit cannot make a resume ask the model again.
//
// undo takes the change back, for a middleware whose commit of the turn
// failed: the run is again unfinished, or served by the agent it had.
// Call it before the turn stage returns, or not at all.
func (t *Turn) ApplyNext() (undo func()) {
	run := t.Run
	switch t.Next.Kind {
	case NextFinalOutput:
		if _, done := run.FinalOutput(); done {
			return func() {}
		}
		runcore.Finish(run, t.Next.Output)
		return func() { runcore.Unfinish(run) }
	case NextHandoff:
		from := run.Agent()
		if t.Next.Agent == nil || t.Next.Agent.Name == from {
			return func() {}
		}
		runcore.SetAgent(run, t.Next.Agent.Name)
		return func() { runcore.SetAgent(run, from) }
	}
	return func() {}
}

// A NextStepKind says how a run goes on after a turn. The zero value is
// invalid: a turn that returned nil always sets one.
type NextStepKind uint8

// The next steps.
const (
	// NextFinalOutput ends the run with NextStep.Output.
	NextFinalOutput NextStepKind = iota + 1
	// NextRunAgain calls the model again with the tools' outputs.
	NextRunAgain
	// NextHandoff runs NextStep.Agent next.
	NextHandoff
	// NextInterruption pauses the run: calls wait for decisions.
	NextInterruption
)

// String returns the step's name, such as "final_output".
func (k NextStepKind) String() string {
	switch k {
	case NextFinalOutput:
		return "final_output"
	case NextRunAgain:
		return "run_again"
	case NextHandoff:
		return "handoff"
	case NextInterruption:
		return "interruption"
	}
	return "NextStepKind(" + strconv.Itoa(int(k)) + ")"
}

// A NextStep is a turn's decision.
type NextStep struct {
	Kind NextStepKind
	// Output is the final output, for NextFinalOutput.
	Output string
	// Value is Output decoded into the agent's output type, for
	// NextFinalOutput when the agent has one ([Agent.Output]); nil
	// otherwise.
	Value any
	// Agent is the handoff target, for NextHandoff.
	Agent *Agent
}
