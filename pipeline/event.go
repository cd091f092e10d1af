package pipeline

import (
	"time"

	"github.com/turnkit/turnkit/state"
)

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

// ContinuationLost reports that a model call continued a server-side
// conversation the server no longer holds (the stored response
// ResponseID, expired or deleted) and was sent again, once, with the whole
// model input. The run goes on; the call costs what it would without
// chaining.
type ContinuationLost struct {
	Turn       int
	ResponseID string
}

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

// ToolCallStarted reports that a tool call entered the tool stage. The
// calls of one response run concurrently, so their ToolCallStarted and
// [ToolCallEnded] events interleave as the calls start and finish. Calls
// that do not reach the tool stage (an unknown tool or malformed arguments
// reported to the model, a call answered before a resume, a handoff) have
// no tool events. A run that does not stream makes no events and pays
// nothing for them.
type ToolCallStarted struct {
	// Turn is the turn's number.
	Turn int
	// Tool, CallID and Arguments are the call's.
	Tool      string
	CallID    string
	Arguments string
}

// ToolCallEnded reports what the tool stage made of a call, as soon as it
// returned: a fast call's event does not wait for its slower siblings. It
// follows the call's [ToolCallStarted]. The call's output is recorded later,
// with the response's other outputs, in call order: its [ItemCreated]
// comes then, and the order of the items in the session and the result
// does not depend on which call finished first. Like text deltas, the
// event reaches a streaming consumer before the output guardrails judged
// a terminal call's output.
type ToolCallEnded struct {
	// Turn is the turn's number.
	Turn int
	// Tool and CallID are the call's.
	Tool   string
	CallID string
	// Status is what became of the call; zero when the tool stage failed,
	// and Err then is the error that ends the run.
	Status ToolStatus
	// Output is the output item at the call's reserved position, for a
	// completed or rejected call; the zero Item when it waits for a
	// decision or failed.
	Output state.Item
	// Err is the tool's own error, reported to the model as the output, or
	// the tool stage's error.
	Err error
	// Duration is the time the tool stage took.
	Duration time.Duration
}

// HostedCallProgress reports a step of a hosted tool's call (a tool the
// model's provider runs: web search, file search, code interpreter, image
// generation, remote MCP) as the provider streams it: Type is the call's
// item type, such as "web_search_call", and Status the step, such as
// "in_progress", "searching", "interpreting", "generating", "completed"
// or "failed". It only informs: the call's item arrives whole with the
// response, and a streamed run records the same items as a plain one.
type HostedCallProgress struct {
	ItemID string
	Type   string
	Status string
}

// AgentChanged reports a handoff.
type AgentChanged struct{ From, To string }

// RunCompleted is the last event of a stream that ended without error.
type RunCompleted struct{ Result *Result }

func (TurnStarted) isEvent()        {}
func (TurnEnded) isEvent()          {}
func (TextDelta) isEvent()          {}
func (ItemCreated) isEvent()        {}
func (ApprovalRequested) isEvent()  {}
func (AgentChanged) isEvent()       {}
func (ToolCallStarted) isEvent()    {}
func (ToolCallEnded) isEvent()      {}
func (GuardrailChecked) isEvent()   {}
func (NestedEvent) isEvent()        {}
func (RunCompleted) isEvent()       {}
func (HostedCallProgress) isEvent() {}
func (ContinuationLost) isEvent()   {}
