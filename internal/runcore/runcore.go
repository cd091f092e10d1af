// Package runcore is the one door to the operations of [state.Run] that
// only turnkit's own packages may use. package state keeps them out of its
// API, so that a middleware or a user holding a *state.Run reads it and
// annotates it (guardrail results, extensions, decisions) but can neither
// corrupt it nor fake its bookkeeping:
//
//   - the pipeline core's: placing items and responses, reserving and
//     recording positions, the turn, the agent, the outcome, usage,
//     pending approvals and the raw writes of nested runs;
//   - the saves': what a store saved of a run ([Saved]), recorded by
//     package state/storage after its backend wrote the delta, and by the
//     session stores' one-transaction save-and-append, and the checkpoint
//     version a run was loaded or forked at ([SetVersion]);
//   - persistence's and the runner's: the run's session, the watermark of
//     what the session holds, and the context the run started from
//     ([SetSessionID], [SetSessionWatermark], [SetHistory],
//     [SetSessionHistory]).
//
// The root deps_test.go names every package allowed to import it (the
// core, the stores, persistence and checkpoint, and their test kits and
// harnesses); it is the only such mechanism for package state.
//
// The operations are state's own (see state/core.go); runcore opens them
// once with its key ([state.Core]) and calls them typed, so a change of
// signature on either side fails to compile.
package runcore

import (
	"encoding/json"

	"github.com/turnkit/turnkit/internal/key"
	"github.com/turnkit/turnkit/state"
)

var ops = state.Core(key.Make())

// Place places a model response in r: items (without positions) at the
// next positions in order, then one reserved position per call for its
// output, calls of them; the response boundary spans both and is returned.
// It is the one way a response enters a run. items are changed in place to
// carry their positions. An item without a valid kind is refused and
// nothing is placed.
func Place(r *state.Run, items []state.Item, calls int) (state.Boundary, error) {
	return ops.Place(r, items, calls)
}

// PlaceModelResponse places a model response as [Place] does, and records
// under the same lock the run's usage u (even if placing fails) and, once
// placed, the model call c that made it, at the position of its first
// item ([AddUsage], [AddModelCall]): the core's one lock per response.
func PlaceModelResponse(r *state.Run, items []state.Item, calls int, u state.Usage, c state.ModelCall) (state.Boundary, error) {
	return ops.PlaceModelResponse(r, items, calls, u, c)
}

// ModelInputAnd returns r's model input ([state.Run.ModelInput]) and its
// extension under key ([state.Run.Extension]) under one lock: the core
// reads a turn's input and the run's view with it.
func ModelInputAnd(r *state.Run, key string) (state.Items, json.RawMessage, bool) {
	return ops.ModelInputAnd(r, key)
}

// RecordOutput records a call's output as [Record] does, unless its
// position already holds an output of the call (decided before), and
// resolves the call's pending approval ([ResolvePending]), under one
// lock; it reports whether it recorded the output.
func RecordOutput(r *state.Run, it state.Item) (bool, error) { return ops.RecordOutput(r, it) }

// NextTurn starts the turn after the run's last unless its number would
// pass limit, and returns that number and whether the turn started
// (what [state.Run.Turn] and [SetTurn] do, under one lock).
func NextTurn(r *state.Run, limit int) (int, bool) { return ops.NextTurn(r, limit) }

// Reserve reserves n consecutive positions and returns the first.
func Reserve(r *state.Run, n int) int64 { return ops.Reserve(r, n) }

// Record adds an item that already has a position. The position must be
// free and reserved (below [state.Run.NextSeq]). An item placed after the
// run's last item is appended in O(1); one placed before it (an output
// decided on resume) is inserted into a copy of the history, so views
// taken earlier stay as they were.
//
// It takes one item, not a variadic list, so that the core's per-output
// call builds no slice.
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

// PendingView returns the pending approvals without copying them: the run
// never changes its list in place (it is copy-on-write), so the view stays
// as it was. Callers must not change its elements; hand out copies.
func PendingView(r *state.Run) []state.Approval { return ops.PendingView(r) }

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

// The operations of the run's bookkeeping across a pause: its checkpoint
// version and what a store last saved of it (the stores), its session,
// what the session holds and the context it started from (persistence,
// checkpoint and the runner).

// SetVersion records the checkpoint version a store loaded r at; 0 makes
// r a new checkpoint (a fork).
func SetVersion(r *state.Run, v int64) { ops.SetVersion(r, v) }

// Saved records that a store saved d: r's version becomes d.Version and
// its next [state.Run.Delta] starts from there. A store calls it after the
// write succeeded, and only then. A delta of another run, or one not taken
// at r's current version (already recorded, or stale), changes nothing.
func Saved(r *state.Run, d *state.Delta) { ops.Saved(r, d) }

// SetSessionID records the session r persists to.
func SetSessionID(r *state.Run, id string) { ops.SetSessionID(r, id) }

// SetSessionWatermark records that every position of r at or below w is
// stored in its session.
func SetSessionWatermark(r *state.Run, w int64) { ops.SetSessionWatermark(r, w) }

// SetHistory sets the context r's items follow, such as the session
// history that persistence reads before the first model call. The items
// are copied. It replaces any previous context and starts r's own items
// after it. Once r placed a model response the context is what the model
// saw, and SetHistory refuses to change it with an error wrapping
// [state.ErrContextSeen], changing nothing.
func SetHistory(r *state.Run, items []state.Item) error { return ops.SetHistory(r, items) }

// SetSessionHistory sets the context r's items follow to items, as
// [SetHistory] does but without copying them (r keeps items, capped at
// their length: the caller gives them up, as it may a session store's
// read, whose items are new values), and records that they are r's
// session history: the last len(items) items of session
// [state.Run.SessionID] placed before r's own items, in order, among the items written before the session's
// write stamp stamp (session.History's Stamp, read with them). r's
// checkpoints then refer to them instead of copying them (see
// [state.Run.HistoryRef]). A stamp of 0 records no stamp: the reference is
// then to the last len(items) items before r's, whenever written. It
// fails as SetHistory does, and with an error wrapping [state.ErrInvalid]
// when r names no session or stamp is negative.
func SetSessionHistory(r *state.Run, items []state.Item, stamp int64) error {
	return ops.SetSessionHistory(r, items, stamp)
}
