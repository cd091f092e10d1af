package pipeline

import "github.com/turnkit/turnkit/state"

// An Event is something [Runner.Stream] reports while a run goes on. The
// concrete types are listed below; a type switch tells them apart. Items
// and approvals in events are copies.
type Event interface{ isEvent() }

// TurnStarted reports that a turn began.
type TurnStarted struct {
	Turn    int
	Agent   string
	Resumed bool
}

// TurnEnded reports a turn's decision.
type TurnEnded struct {
	Turn int
	Next NextStepKind
}

// TextDelta is a piece of an assistant message as the model streams it.
// Deltas reach the consumer before the output guardrails ran; the session
// and the result still obey their verdict.
type TextDelta struct {
	ItemID string
	Delta  string
}

// ItemCreated reports an item the run recorded: a message, reasoning, a
// call or an output.
type ItemCreated struct{ Item state.Item }

// ApprovalRequested reports a call that waits for a decision.
type ApprovalRequested struct{ Approval state.Approval }

// GuardrailChecked reports a guardrail's verdict as it is recorded in the
// run's state, before a tripwire ends the run: a streaming consumer sees
// which guardrail passed, replaced, rejected or stopped what.
type GuardrailChecked struct{ Result state.GuardrailResult }

// NestedEvent carries an event of a nested run, that of an agent used as a
// tool ([AgentTool]), to the outer run's stream. CallID is the outer call
// that runs the nested agent; nested runs of nested runs wrap once per
// level.
type NestedEvent struct {
	CallID string
	Agent  string
	Event  Event
}

// AgentChanged reports a handoff.
type AgentChanged struct{ From, To string }

// RunCompleted is the last event of a stream that ended without error.
type RunCompleted struct{ Result *Result }

func (TurnStarted) isEvent()       {}
func (TurnEnded) isEvent()         {}
func (TextDelta) isEvent()         {}
func (ItemCreated) isEvent()       {}
func (ApprovalRequested) isEvent() {}
func (AgentChanged) isEvent()      {}
func (GuardrailChecked) isEvent()  {}
func (NestedEvent) isEvent()       {}
func (RunCompleted) isEvent()      {}
