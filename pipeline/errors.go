package pipeline

import (
	"errors"
	"fmt"
	"strconv"
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
	// reached from the agent given to Resume.
	ErrUnknownAgent = errors.New("pipeline: unknown agent")
	// ErrNothingToResume means Resume got a run that is finished or never
	// paused.
	ErrNothingToResume = errors.New("pipeline: nothing to resume")
)

// A MaxTurnsError reports that a run reached its turn limit.
type MaxTurnsError struct {
	MaxTurns int
}

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

func (e *UnknownToolError) Error() string {
	return fmt.Sprintf("pipeline: agent %q has no tool %q (call %s)", e.Agent, e.Tool, e.CallID)
}

// Unwrap returns [ErrUnknownTool].
func (e *UnknownToolError) Unwrap() error { return ErrUnknownTool }

// An ArgumentError reports tool arguments that could not be decoded or
// validated. Path is the JSON path of the bad value ("" for the whole
// arguments, e.g. a syntax error, with the byte offset in Offset).
type ArgumentError struct {
	Tool   string
	CallID string
	Path   string
	Offset int64
	Err    error
}

func (e *ArgumentError) Error() string {
	where := e.Path
	if where == "" {
		where = "arguments"
	}
	if e.Offset > 0 {
		where += " at offset " + strconv.FormatInt(e.Offset, 10)
	}
	return fmt.Sprintf("pipeline: tool %q call %s: %s: %v", e.Tool, e.CallID, where, e.Err)
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

func (e *ToolError) Error() string {
	return fmt.Sprintf("pipeline: tool %q call %s: %v", e.Tool, e.CallID, e.Err)
}

// Unwrap returns the tool's error.
func (e *ToolError) Unwrap() error { return e.Err }

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
	Err  error
}

func (e *ModelError) Error() string {
	s := "pipeline: model"
	if e.Status != 0 {
		s += " status " + strconv.Itoa(e.Status)
	}
	if e.RequestID != "" {
		s += " request " + e.RequestID
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *ModelError) Unwrap() error { return e.Err }

// A PanicError is a panic recovered by [Recover].
type PanicError struct {
	Stage string // "turn", "model" or "tool"
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("pipeline: panic in %s stage: %v", e.Stage, e.Value)
}

// Unwrap returns the panic value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// An UnknownAgentError reports a checkpoint whose current agent cannot be
// found among the agents reachable from the one given to Resume.
type UnknownAgentError struct {
	Agent string
}

func (e *UnknownAgentError) Error() string {
	return fmt.Sprintf("pipeline: resume: agent %q is not reachable from the given agent", e.Agent)
}

// Unwrap returns [ErrUnknownAgent].
func (e *UnknownAgentError) Unwrap() error { return ErrUnknownAgent }
