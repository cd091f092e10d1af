package guardrails

import (
	"errors"
	"fmt"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// Errors returned by guardrails; match them with errors.Is.
var (
	// ErrTripwire means a guardrail tripped and stopped the run. It is
	// wrapped by [*TripwireError].
	ErrTripwire = errors.New("guardrails: tripwire triggered")
	// ErrCheck means a check failed to reach a verdict (it returned an
	// error, an info that does not marshal, or a behavior its stage does not
	// allow). It is wrapped by [*CheckError].
	ErrCheck = errors.New("guardrails: check failed")
)

// A TripwireError reports a guardrail that tripped. The run stops, and a
// run stopped by a tripwire cannot be resumed past it: resuming it returns
// the same error before any turn runs. Its
// partial data stays reachable: State is a deep copy of the run's state at
// the moment the guardrail tripped (its items so far and every guardrail
// result, this one included), and the [pipeline.Result] the runner returns
// with the error holds the live state.
type TripwireError struct {
	// Guardrail names the check that tripped.
	Guardrail string
	// Stage says what it checked.
	Stage state.GuardrailStage
	// Turn is the turn it tripped on.
	Turn int
	// CallID names the call a tool guardrail checked ("" otherwise).
	CallID string
	// Info is the verdict's info, as the check returned it (the recorded
	// JSON, a json.RawMessage, when a resume was refused).
	Info any
	// Result is the result recorded in the run's state.
	Result state.GuardrailResult
	// State is a deep copy of the run's state when the guardrail tripped
	// (or when a resume of the run was refused).
	State *state.Run
}

// Error names the stage, the guardrail, the turn and the call, if any.
func (e *TripwireError) Error() string {
	s := fmt.Sprintf("guardrails: %s guardrail %q tripped on turn %d", e.Stage, e.Guardrail, e.Turn)
	if e.CallID != "" {
		s += " (call " + e.CallID + ")"
	}
	return s
}

// Unwrap returns [ErrTripwire] and, for the stages that middleware outside
// the guardrails acts on, the core's verdict sentinel:
// [pipeline.ErrInputRejected] for an input guardrail and
// [pipeline.ErrOutputRejected] for an output guardrail.
func (e *TripwireError) Unwrap() []error {
	switch e.Stage {
	case state.StageInput:
		return []error{ErrTripwire, pipeline.ErrInputRejected}
	case state.StageOutput:
		return []error{ErrTripwire, pipeline.ErrOutputRejected}
	}
	return []error{ErrTripwire}
}

// GuardrailResult returns the tripped result. It lets a middleware that does
// not import this package recognise a tripwire with errors.As into an
// interface{ GuardrailResult() state.GuardrailResult }.
func (e *TripwireError) GuardrailResult() state.GuardrailResult { return e.Result }

// A CheckError reports a check that failed to reach a verdict. It is not a
// tripwire: nothing is recorded for the check, and the run ends with the
// error, keeping what it recorded so far.
type CheckError struct {
	// Guardrail names the check that failed.
	Guardrail string
	// Stage says what it was checking.
	Stage state.GuardrailStage
	// Turn is the turn it failed on.
	Turn int
	// CallID names the call a tool guardrail was checking ("" otherwise).
	CallID string
	// Err is the cause.
	Err error
}

// Error names the stage, the guardrail, the turn, the call, if any, and the check's error.
func (e *CheckError) Error() string {
	s := fmt.Sprintf("guardrails: %s guardrail %q on turn %d", e.Stage, e.Guardrail, e.Turn)
	if e.CallID != "" {
		s += " (call " + e.CallID + ")"
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the cause; errors.Is(err, ErrCheck) and
// errors.Is(err, [pipeline.ErrGuardrailFailed]) also report true.
func (e *CheckError) Unwrap() []error { return []error{ErrCheck, pipeline.ErrGuardrailFailed, e.Err} }
