package guardrails

import (
	"context"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// A Subject is what a guardrail checks: the run's input items (input
// guardrails), the final output (output guardrails), a tool call (tool input
// guardrails), or a call with its result (tool output guardrails).
type Subject interface {
	[]state.Item | string | *pipeline.ToolCall | pipeline.ToolOutcome
}

// A Check inspects subject on behalf of agent and returns its [Verdict], or
// an error when it could not decide (the run then ends with a
// [*CheckError]; an error is not a tripwire).
//
// A Check must honour ctx: when several checks of one guardrail run at once,
// the first tripwire cancels the others. It must be safe for concurrent use,
// since one guardrail serves every run of a runner, and it must not modify
// subject or agent: the slices, calls and results it gets belong to the
// run. The four kinds are:
//
//	Check[[]state.Item]          for [Input]: the run's input, as placed
//	Check[string]                for [Output]: the final output
//	Check[*pipeline.ToolCall]    for [ToolInput]: the call, before it runs
//	Check[pipeline.ToolOutcome]  for [ToolOutput]: the call and what it returned
type Check[T Subject] func(ctx context.Context, agent *pipeline.Agent, subject T) (Verdict, error)

// A Behavior says what a passing tool guardrail does with the call. The
// zero Behavior is unset and means [Allow]; it is recorded by name (see
// [Behavior.String]), never by number.
type Behavior uint8

// The behaviors of a tool guardrail.
const (
	// Allow lets the call run (tool input) or its output stand (tool output).
	Allow Behavior = iota + 1
	// Reject stops a call before it runs: the tool does not run and the
	// model sees the verdict's Message as the call's output, with status
	// [pipeline.ToolRejected]. Only tool input guardrails may reject.
	Reject
	// Replace replaces a completed call's output with the verdict's Message.
	// Only tool output guardrails may replace.
	Replace
)

var behaviorNames = [...]string{Allow: "allow", Reject: "reject", Replace: "replace"}

// String returns "allow", "reject" or "replace"; the unset Behavior reads
// "allow", as it acts.
func (b Behavior) String() string {
	if b == 0 {
		return "allow"
	}
	if int(b) >= len(behaviorNames) {
		return "Behavior(invalid)"
	}
	return behaviorNames[b]
}

// A Verdict is a check's answer. The zero Verdict passes without info.
type Verdict struct {
	// Tripwire stops the run with a [*TripwireError].
	Tripwire bool
	// Info says what the check found. It is recorded in the run's state as
	// JSON, so it must marshal with encoding/json; the [*TripwireError]
	// carries the value itself.
	Info any
	// Behavior and Message are for tool guardrails that pass: [Reject] (tool
	// input) or [Replace] (tool output) with the message the model sees.
	// Input and output guardrails accept only the unset Behavior or [Allow].
	Behavior Behavior
	Message  string
}

// Pass returns a passing verdict with info.
func Pass(info any) Verdict { return Verdict{Info: info} }

// Trip returns a tripwire verdict with info.
func Trip(info any) Verdict { return Verdict{Tripwire: true, Info: info} }

// RejectCall returns a tool input verdict that stops the call before it
// runs; the model sees message as the call's output.
func RejectCall(message string, info any) Verdict {
	return Verdict{Behavior: Reject, Message: message, Info: info}
}

// ReplaceOutput returns a tool output verdict that replaces the call's
// output with message.
func ReplaceOutput(message string, info any) Verdict {
	return Verdict{Behavior: Replace, Message: message, Info: info}
}
