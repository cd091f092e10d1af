// Package runcore is the pipeline core's access to the operations of
// [state.Run] that move positions, boundaries, the turn, the agent and the
// outcome. package state keeps them out of its API, so a middleware holding
// a *state.Run reads it and annotates it but cannot corrupt it; the core
// (package pipeline), its test kit (pipeline/pipelinetest) and the stores'
// test kits that must build runs by hand use them through here. The root
// deps_test.go names every package allowed to import it.
//
// The operations are state's own (see state/core.go); package hook carries
// them here, and a change of signature on one side fails this package's
// initialisation, that is every test that links it.
package runcore

import (
	"github.com/turnkit/turnkit/internal/runcore/hook"
	"github.com/turnkit/turnkit/state"
)

type coreOps interface {
	Place(r *state.Run, items []state.Item, calls int) (state.Boundary, error)
	Reserve(r *state.Run, n int) int64
	Record(r *state.Run, it state.Item) error
	RecordAll(r *state.Run, items []state.Item) error
	SetResponse(r *state.Run, b state.Boundary)
	AddInput(r *state.Run, items ...state.Item) []state.Item
	SetTurn(r *state.Run, n int)
	SetMaxTurns(r *state.Run, n int)
	SetAgent(r *state.Run, name string)
	Finish(r *state.Run, output string)
	Unfinish(r *state.Run)
	AddUsage(r *state.Run, u state.Usage)
	AddModelCall(r *state.Run, c state.ModelCall)
	AddPending(r *state.Run, a state.Approval)
	ResolvePending(r *state.Run, callID string)
	ResolveOwned(r *state.Run, owner string)
	AddDecision(r *state.Run, d state.Decision)
	ReplaceContext(r *state.Run, items []state.Item)
	WithholdInput(r *state.Run, stored []state.Item) error
	AddNestedGuardrails(r *state.Run, owner, agent string, gs []state.GuardrailResult)
}

var ops = hook.Ops.(coreOps)

// Place places a model response in r: items (without positions) at the
// next positions in order, then one reserved position per call for its
// output, calls of them; the response boundary spans both and is returned.
// It is the one way a response enters a run. items are changed in place to
// carry their positions. An item without a valid kind is refused and
// nothing is placed.
func Place(r *state.Run, items []state.Item, calls int) (state.Boundary, error) {
	return ops.Place(r, items, calls)
}

// Reserve reserves n consecutive positions and returns the first.
func Reserve(r *state.Run, n int) int64 { return ops.Reserve(r, n) }

// Record adds an item that already has a position. The position must be
// free and reserved (below [state.Run.NextSeq]). An item placed after the
// run's last item is appended in O(1); one placed before it (an output
// decided on resume) is inserted into a copy of the history, so views
// taken earlier stay as they were.
//
// It takes one item, not a variadic list: a slice handed through the hook's
// interface escapes to the heap, and the core records an item per call
// output on every turn.
func Record(r *state.Run, it state.Item) error { return ops.Record(r, it) }

// RecordAll records items as [Record] does, in order; their positions must
// increase.
func RecordAll(r *state.Run, items ...state.Item) error { return ops.RecordAll(r, items) }

// SetResponse records the boundary of the current model response.
func SetResponse(r *state.Run, b state.Boundary) { ops.SetResponse(r, b) }

// AddInput places the items at the next positions, records them as the
// run's input and returns the placed copies.
func AddInput(r *state.Run, items ...state.Item) []state.Item { return ops.AddInput(r, items...) }

// SetTurn records that turn n has started.
func SetTurn(r *state.Run, n int) { ops.SetTurn(r, n) }

// SetMaxTurns sets the run's turn limit.
func SetMaxTurns(r *state.Run, n int) { ops.SetMaxTurns(r, n) }

// SetAgent makes the named agent current (after a handoff).
func SetAgent(r *state.Run, name string) { ops.SetAgent(r, name) }

// Finish records the run's final output.
func Finish(r *state.Run, output string) { ops.Finish(r, output) }

// Unfinish takes back a Finish whose turn did not commit.
func Unfinish(r *state.Run) { ops.Unfinish(r) }

// AddUsage adds u to the run's usage totals.
func AddUsage(r *state.Run, u state.Usage) { ops.AddUsage(r, u) }

// AddModelCall records a model call's place and usage in the run.
func AddModelCall(r *state.Run, c state.ModelCall) { ops.AddModelCall(r, c) }

// AddPending records that a call waits for a decision. Recording the same
// call ID again replaces the earlier record.
func AddPending(r *state.Run, a state.Approval) { ops.AddPending(r, a) }

// ResolvePending removes the call from the pending approvals, once it ran
// or was rejected.
func ResolvePending(r *state.Run, callID string) { ops.ResolvePending(r, callID) }

// ResolveOwned removes the pending approvals owned by owner (a call ID) and
// deeper ones, once the nested run went on.
func ResolveOwned(r *state.Run, owner string) { ops.ResolveOwned(r, owner) }

// AddDecision records a decision as given, under the rules the deciding
// methods keep: the first exact decision on a call stands; an "always"
// decision replaces the tool's earlier one. It is the raw write the core
// uses to hand a nested run its decisions, already checked.
func AddDecision(r *state.Run, d state.Decision) { ops.AddDecision(r, d) }

// ReplaceContext makes items the whole model context from now on: the next
// model calls see items followed by the run's items recorded after this
// call. Handoff input filters use it.
func ReplaceContext(r *state.Run, items []state.Item) { ops.ReplaceContext(r, items) }

// WithholdInput replaces the input placed on r's first turn by stored:
// stored[i] takes the position of the i-th input item, and input items
// beyond stored are removed. An input guardrail's ruling on a blocked
// input uses it, so that the run's state and its next (full) save never
// hold the input.
func WithholdInput(r *state.Run, stored []state.Item) error { return ops.WithholdInput(r, stored) }

// AddNestedGuardrails records in r the guardrail results gs that a nested
// run recorded (an agent used as a tool): owner is the call of r that ran
// the nested run and agent the nested run's agent. Each result is tagged
// with them ([state.GuardrailResult.Owner], Agent; its CallID qualified as
// "<owner>/<call ID>"), so it is told apart from r's own results.
func AddNestedGuardrails(r *state.Run, owner, agent string, gs []state.GuardrailResult) {
	ops.AddNestedGuardrails(r, owner, agent, gs)
}
