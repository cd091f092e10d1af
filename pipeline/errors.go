package pipeline

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/turnkit/turnkit/state"
)

// Errors the runner returns; match them with errors.Is.
var (
	// ErrMaxTurns means the run used up its turns. It is wrapped by
	// [*MaxTurnsError].
	ErrMaxTurns = errors.New("pipeline: max turns exceeded")
	// ErrUnknownTool means the model called a tool the agent does not have.
	// It is wrapped by [*UnknownToolError].
	ErrUnknownTool = errors.New("pipeline: unknown tool")
	// ErrInvalidArguments means a call's arguments are not what the tool
	// accepts. It is wrapped by [*ArgumentError].
	ErrInvalidArguments = errors.New("pipeline: invalid tool arguments")
	// ErrUnknownAgent means a checkpoint names an agent that cannot be
	// reached from the agent given to Resume. It is wrapped by
	// [*UnknownAgentError].
	ErrUnknownAgent = errors.New("pipeline: unknown agent")
	// ErrNothingToResume means Resume got a run with nothing left to do: it
	// finished, or it never started (no items and no turn; start it with
	// [Runner.Run] and [WithState]). A run that paused, failed or was
	// cancelled part way resumes.
	ErrNothingToResume = errors.New("pipeline: nothing to resume")
	// ErrToolFailed means a tool failed and the runner was told to abort
	// on tool errors (see [WithToolErrorsAbort]). It is wrapped by
	// [*ToolError].
	ErrToolFailed = errors.New("pipeline: tool failed")
	// ErrModel means a model call failed. It is wrapped by [*ModelError],
	// beside the adapter's own cause.
	ErrModel = errors.New("pipeline: model call failed")
	// ErrPanic means a stage panicked and [WithRecover] turned the panic into
	// an error. It is wrapped by [*PanicError].
	ErrPanic = errors.New("pipeline: panic recovered")
)

// ErrToolPending is returned (wrapped) by a [Tool] whose call cannot
// finish until a human decides something. The core turns it into a
// [ToolPending] result: the call gets no output, the turn ends in an
// interruption, and resuming the run calls the tool again. The call is
// recorded as pending itself unless the tool recorded approvals owned by
// the call (see [state.Approval.Owner]), as an agent used as a tool does.
var ErrToolPending = errors.New("pipeline: tool call waits for a decision")

// An ElicitationError is returned by a tool whose call cannot finish
// until the user answers a request for input its MCP server made
// (package tool/mcp returns it). It wraps [ErrToolPending]: the core
// records the call as pending with the request
// ([state.Approval.Elicitation]), the turn ends in an interruption, and
// resuming the run after [state.Run.AnswerElicitation] calls the tool
// again.
type ElicitationError struct {
	Tool        string
	CallID      string
	Elicitation state.Elicitation
}

// Error names the call, the server and the message.
func (e *ElicitationError) Error() string {
	return fmt.Sprintf("pipeline: tool %q call %s waits for an answer to server %q: %q",
		e.Tool, e.CallID, e.Elicitation.Server, e.Elicitation.Message)
}

// Unwrap returns [ErrToolPending].
func (e *ElicitationError) Unwrap() error { return ErrToolPending }

// Guardrail verdicts that middleware outside the guardrails acts on. The
// guardrail middleware's errors match them with errors.Is (its tripwire
// error reports the stage it tripped at), so persistence, logging and
// tracing can tell a verdict from a failure without importing the
// guardrails package.
var (
	// ErrInputRejected means an input guardrail tripped: the run's input
	// was refused. The input stays in the session; no model output is
	// stored.
	ErrInputRejected = errors.New("pipeline: input rejected by a guardrail")
	// ErrOutputRejected means an output guardrail tripped: the turn's model
	// output (its messages, a terminal tool's output) must not be kept.
	ErrOutputRejected = errors.New("pipeline: output rejected by a guardrail")
	// ErrGuardrailFailed means a guardrail could not reach a verdict (its
	// check returned an error). It is not a tripwire: the turn's items are
	// kept and the error ends the run.
	ErrGuardrailFailed = errors.New("pipeline: guardrail failed")
)

// Errors of structured output; match them with errors.Is.
var (
	// ErrInvalidOutput means a final output does not match its agent's
	// output type. It is wrapped by [*OutputError].
	ErrInvalidOutput = errors.New("pipeline: invalid final output")
	// ErrRefused means the model refused to answer an agent that declares
	// an output type. It is wrapped by [*RefusalError].
	ErrRefused = errors.New("pipeline: model refused")
	// ErrOutputType means a type asked for or a terminal tool's result type
	// is not the agent's output type. It is wrapped by [*OutputTypeError].
	ErrOutputType = errors.New("pipeline: output type mismatch")
	// ErrNoFinalOutput means the run has not finished: it paused, failed or
	// was stopped before a final output.
	ErrNoFinalOutput = errors.New("pipeline: no final output")
)

// A MaxTurnsError reports that a run reached its turn limit.
type MaxTurnsError struct {
	MaxTurns int
}

// Error gives the turn limit that was exceeded.
func (e *MaxTurnsError) Error() string {
	return "pipeline: max turns (" + strconv.Itoa(e.MaxTurns) + ") exceeded"
}

// Unwrap returns [ErrMaxTurns].
func (e *MaxTurnsError) Unwrap() error { return ErrMaxTurns }

// An UnknownToolError reports a call to a tool the agent does not have.
type UnknownToolError struct {
	Agent  string
	Tool   string
	CallID string
}

// Error names the agent, the tool and the call.
func (e *UnknownToolError) Error() string {
	return fmt.Sprintf("pipeline: agent %q has no tool %q (call %s)", e.Agent, e.Tool, e.CallID)
}

// Unwrap returns [ErrUnknownTool].
func (e *UnknownToolError) Unwrap() error { return ErrUnknownTool }

// An ArgumentError reports tool arguments that could not be decoded or
// validated. Path is the JSON path of the bad value ("" for the whole
// arguments, e.g. a syntax error, with the byte offset in Offset).
//
// A tool may return one ArgumentError value from many calls, even at
// once: the runner never changes it. When Tool or CallID is empty, the
// runner reports a copy with the call's tool name and call ID filled in.
type ArgumentError struct {
	Tool   string
	CallID string
	Path   string
	Offset int64
	Err    error
}

// Error names the tool, the call, the JSON path or byte offset, and the cause.
func (e *ArgumentError) Error() string {
	where := e.Path
	if where == "" {
		where = "arguments"
	}
	if e.Offset > 0 {
		where += " at offset " + strconv.FormatInt(e.Offset, 10)
	}
	return fmt.Sprintf("pipeline: tool %q call %s: %s: %s", e.Tool, e.CallID, where, cause(e.Err))
}

// Unwrap returns the cause; errors.Is(err, ErrInvalidArguments) also
// reports true.
func (e *ArgumentError) Unwrap() []error { return []error{ErrInvalidArguments, e.Err} }

// A ToolError reports a tool that failed when the runner was told to abort
// on tool errors (see [WithToolErrorsAbort]).
type ToolError struct {
	Tool   string
	CallID string
	Err    error
}

// Error names the tool, the call and the tool's error.
func (e *ToolError) Error() string {
	return fmt.Sprintf("pipeline: tool %q call %s: %s", e.Tool, e.CallID, cause(e.Err))
}

// Unwrap returns [ErrToolFailed] and the tool's error.
func (e *ToolError) Unwrap() []error { return []error{ErrToolFailed, e.Err} }

// A ModelError is a model failure translated at the model adapter's edge.
type ModelError struct {
	// Status is the HTTP status, or 0 when there was no response.
	Status int
	// Retryable reports whether retrying may succeed (429, 5xx, network).
	Retryable bool
	// RequestID is the provider's request ID, if any.
	RequestID string
	// Code is the provider's error code, if any.
	Code string
	// RetryAfter is how long the provider asked to wait before the call is
	// made again (its Retry-After), or 0 when it did not say.
	RetryAfter time.Duration
	Err        error
}

// Error gives the status, request ID and code, where known, and the cause.
func (e *ModelError) Error() string {
	s := "pipeline: model"
	if e.Status != 0 {
		s += " status " + strconv.Itoa(e.Status)
	}
	if e.RequestID != "" {
		s += " request " + e.RequestID
	}
	return s + ": " + cause(e.Err)
}

// Unwrap returns [ErrModel] and the cause.
func (e *ModelError) Unwrap() []error { return []error{ErrModel, e.Err} }

// A PanicError is a panic recovered by [WithRecover].
type PanicError struct {
	Stage string // "turn", "model" or "tool"
	Value any
	Stack []byte
}

// Error names the stage that panicked and the panic value.
func (e *PanicError) Error() string {
	return fmt.Sprintf("pipeline: panic in %s stage: %v", e.Stage, e.Value)
}

// Unwrap returns [ErrPanic] and the panic value if it is an error.
func (e *PanicError) Unwrap() []error {
	if err, ok := e.Value.(error); ok {
		return []error{ErrPanic, err}
	}
	return []error{ErrPanic}
}

// An UnknownAgentError reports a checkpoint whose current agent cannot be
// found among the agents reachable from the one given to Resume.
type UnknownAgentError struct {
	Agent string
}

// Error names the agent that is not reachable.
func (e *UnknownAgentError) Error() string {
	return fmt.Sprintf("pipeline: resume: agent %q is not reachable from the given agent", e.Agent)
}

// Unwrap returns [ErrUnknownAgent].
func (e *UnknownAgentError) Unwrap() error { return ErrUnknownAgent }

// A stateCarrier is an error that carries the resumable state of the run
// that returned it. Every error a run returns once it started is one (see
// [RunError]), whatever the error wrapped inside is, so a plain "return
// err" up the stack keeps what is needed to resume; [StateOf] finds it, and
// any error of another package with the same methods.
type stateCarrier interface {
	error
	// State returns a detached copy of the run's state when the run
	// failed; each call returns a new copy.
	State() *state.Run
}

// StateOf returns the resumable state carried by err or by an error it
// wraps: a detached copy, ready for [Runner.Resume] or a checkpoint. It
// reports false for errors that carry none, such as those returned before a
// run started (a nil agent, an invalid input, nothing to resume).
func StateOf(err error) (*state.Run, bool) {
	if sc, ok := errors.AsType[stateCarrier](err); ok {
		return sc.State(), true
	}
	return nil, false
}

// A RunError is the error of a run that started: [Runner.Run],
// [Runner.Resume] and, as their last value, [Runner.Stream] and
// [Runner.ResumeStream] return every error that way, so the state travels
// with the error. Err is the cause as the chain returned it (a
// *persistence.AppendError, a tripwire, a model error, the context's
// error ...); errors.Is and errors.As see through a RunError to it, and its
// message is the cause's.
//
// The RunError holds a snapshot of the run taken when it failed: later
// changes to a state the caller holds (see [WithState]) do not reach it,
// and what it hands out is detached.
type RunError struct {
	// RunID is the ID of the run that failed.
	RunID string
	// Err is the cause.
	Err error

	result *Result // a snapshot; its run is shared by nothing else
}

func newRunError(res *Result, err error) *RunError {
	return &RunError{RunID: res.run.ID(), Err: err, result: res.snapshot()}
}

// Error returns the cause's message.
func (e *RunError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *RunError) Unwrap() error { return e.Err }

// State returns a detached copy of the run's state when it failed: what
// [Result.State] of the same run returned at that moment. Each call
// returns a new copy.
func (e *RunError) State() *state.Run { return e.result.State() }

// Result returns the run's result when it failed, as [Runner.Run] returns
// it beside its error: the items recorded so far, the last agent, the
// state. A streamed run gets it here. Each call returns a new, detached
// copy.
func (e *RunError) Result() *Result { return e.result.copy() }

// cause returns err's message without this package's prefix, so that a
// pipeline error wrapping another names the package once.
func cause(err error) string { return strings.TrimPrefix(err.Error(), "pipeline: ") }

// A wrapError is an error with its own message that wraps err; it lets a
// message name a sentinel of this package without repeating its prefix.
type wrapError struct {
	msg string
	err error
}

func (e *wrapError) Error() string { return e.msg }
func (e *wrapError) Unwrap() error { return e.err }

// wrapf returns an error reading format's message followed by ": " and
// err's message without the package prefix, then tail if not empty;
// it wraps err.
func wrapf(err error, tail, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...) + ": " + cause(err)
	if tail != "" {
		msg += ": " + tail
	}
	return &wrapError{msg: msg, err: err}
}
