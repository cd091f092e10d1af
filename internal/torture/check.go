package torture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// A CheckResult is what [Check] found.
type CheckResult struct {
	Runs int `json:"runs"`
	// Finished counts the runs that ended: with their final output, or
	// stopped by the output guardrail as planned (Tripped counts those).
	Finished int `json:"finished"`
	Tripped  int `json:"tripped"`
	// Handoffs and Withheld count the handoff outputs and the withheld
	// terminal outputs the sessions of the ended runs hold.
	Handoffs int `json:"handoffs"`
	Withheld int `json:"withheld"`
	// Executions counts tool executions in the effect log for the plan's
	// runs; Retries those that ran again under the same idempotency key
	// because an earlier execution crashed before its commit.
	Executions int `json:"executions"`
	Retries    int `json:"retries"`
	// LostRetryable counts the lookup calls ([ToolLookup], retryable)
	// that ran in a process killed before their output was committed and
	// that the checkpoint never held: resume asked the model again, and the
	// lookup ran again under a new call ID.
	LostRetryable int `json:"lost_retryable"`
	// TimedOut counts the stored outputs of slow lookups: their timeout,
	// naming the execution that ran past its limit.
	TimedOut int `json:"timed_out"`
	// TimedOutEarly counts the stored outputs of lookups whose limit
	// passed before they began, on a busy machine: they never ran.
	TimedOutEarly int `json:"timed_out_early"`
	// PoppedOwn counts the runs that ended after a worker popped their
	// own items while they were paused; PoppedHistory the runs that stayed
	// paused after a pop into their history (see [WithPops]).
	PoppedOwn     int `json:"popped_own"`
	PoppedHistory int `json:"popped_history"`
	// Pruned counts the runs checked against their archived checkpoint:
	// finished runs whose checkpoint the retention deleted.
	Pruned int `json:"pruned"`
	// Violations lists every broken invariant; it must be empty.
	Violations []string `json:"violations,omitempty"`
}

// Check verifies the stores and the effect log against plan:
//
//   - every session is valid model input: each call has exactly one
//     output after it, no output lacks its call, no item is stored twice;
//   - the session never holds an item of a run that the run's checkpoint
//     does not, except a tool output whose call the checkpoint holds open
//     (resume finds it through the persistence ledger);
//   - no checkpoint and no session holds anything of a failed model call
//     (a flaky step's first call, [FailedMarker]);
//   - a slow lookup's stored output is its timeout ([TimedOutNote]) and
//     names the execution that ran past its limit; no other output is a
//     timeout, but a lookup's whose limit passed before it began
//     ([TimedOutEarlyNote]), which names no execution: the call never
//     ran (its earlier executions, if any, were all killed);
//   - every stored tool output comes from an execution of that call, a
//     rejected call never ran, and a call ran more than once only if each
//     earlier execution was in a process that was killed before the call's
//     commit (these retries are counted);
//   - a lookup call ([ToolLookup], retryable) may also have run with no
//     output in the session, if every execution of it was in a process
//     that was killed and the run's checkpoint does not hold the call: its
//     response was lost, and resume asked the model again (these are
//     counted as LostRetryable); any other call, and a lookup run by a
//     process that was not killed, must reach the session;
//   - one logical call (run, step, index) ran under one idempotency key,
//     not counting the keys of lost lookups;
//   - a run whose output guardrail tripped was planned to trip, its
//     session never holds the tripped final output (a finish call's output
//     is stored as [persistence.WithheldOutput], the checkpoint keeping
//     the real one), and it is never finished;
//   - with final set: every run ended as planned (finished with its final
//     output and served last by the agent its handoffs lead to, or stopped
//     by the tripwire), its session holds all the items it keeps, and
//     every execution is committed.
//
// killed holds the IDs of the processes the torture loop killed.
func Check(ctx context.Context, sessions session.Store, states state.Store, plan Plan, execs []Execution, killed map[int]bool, final bool) (CheckResult, error) {
	return CheckArchived(ctx, sessions, states, nil, plan, execs, killed, final)
}

// CheckArchived is [Check] of runs whose finished checkpoints a retention
// may have deleted: a run without a checkpoint is checked against its
// checkpoint in archived (see [ReadArchive]), which was recorded before
// the delete, and counted in Pruned.
func CheckArchived(ctx context.Context, sessions session.Store, states state.Store, archived map[string]*state.Run, plan Plan, execs []Execution, killed map[int]bool, final bool) (CheckResult, error) {
	res := CheckResult{Runs: len(plan.Runs)}
	bad := func(format string, args ...any) {
		res.Violations = append(res.Violations, fmt.Sprintf(format, args...))
	}

	var sids []string
	for _, r := range plan.Runs {
		if !slices.Contains(sids, r.Session) {
			sids = append(sids, r.Session)
		}
	}
	for _, sid := range sids {
		items, err := sessions.List(ctx, sid, 0)
		if err != nil {
			return res, fmt.Errorf("torture: check: list session %s: %w", sid, err)
		}
		checkSession(sid, items, bad)
	}

	byRun := make(map[string][]Execution)
	for _, e := range execs {
		byRun[e.Run] = append(byRun[e.Run], e)
	}
	for _, spec := range plan.Runs {
		fin, err := checkRun(ctx, sessions, archivedStates{states, archived, &res.Pruned}, plan, spec, byRun[spec.ID], killed, final, &res, bad)
		if err != nil {
			return res, err
		}
		if fin {
			res.Finished++
		}
		if fin && spec.Trip {
			res.Tripped++
		}
	}
	return res, nil
}

// archivedStates loads a run from the archive when its checkpoint is
// gone, and counts it.
type archivedStates struct {
	state.Store
	archived map[string]*state.Run
	pruned   *int
}

func (a archivedStates) Load(ctx context.Context, runID string) (*state.Run, error) {
	run, err := a.Store.Load(ctx, runID)
	if ar, ok := a.archived[runID]; ok && errors.Is(err, state.ErrNotFound) {
		*a.pruned++
		return ar, nil
	}
	return run, err
}

// checkSession checks that a session is valid model input.
func checkSession(sid string, items []state.Item, bad func(string, ...any)) {
	open := make(map[string]bool) // call ID → waiting for its output
	seenCall := make(map[string]bool)
	seenRaw := make(map[string]int)
	for i, it := range items {
		raw := string(it.Raw())
		if j, dup := seenRaw[raw]; dup {
			bad("session %s: item %d (%s) duplicates item %d", sid, i, it, j)
		}
		seenRaw[raw] = i
		switch {
		case it.Kind().IsCall():
			if seenCall[it.CallID()] {
				bad("session %s: call %s stored twice", sid, it.CallID())
			}
			seenCall[it.CallID()], open[it.CallID()] = true, true
		case it.Kind().IsOutput():
			if !open[it.CallID()] {
				bad("session %s: output of call %s at item %d has no open call before it", sid, it.CallID(), i)
			}
			open[it.CallID()] = false
		}
	}
	for id, waiting := range open {
		if waiting {
			bad("session %s: call %s has no output", sid, id)
		}
	}
}

// checkRun checks one run; it reports whether the run ended: finished, or
// stopped by the output guardrail as planned.
func checkRun(ctx context.Context, sessions session.Store, states state.Store, plan Plan, spec RunSpec, execs []Execution, killed map[int]bool, final bool, res *CheckResult, bad func(string, ...any)) (bool, error) {
	id := spec.ID
	res.Executions += len(execs)
	ck, err := states.Load(ctx, id)
	if errors.Is(err, state.ErrNotFound) {
		if _, ok, err := sessions.Lookup(ctx, spec.Session, id, 1); err != nil {
			return false, err
		} else if ok {
			bad("run %s: the session holds items but there is no checkpoint", id)
		}
		if len(execs) > 0 {
			bad("run %s: %d tool executions but no checkpoint", id, len(execs))
		}
		if final {
			bad("run %s: never started", id)
		}
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("torture: check: load run %s: %w", id, err)
	}

	for _, it := range ck.Items().All() {
		if strings.Contains(it.Text(), FailedMarker) {
			bad("run %s seq %d: the checkpoint holds %s, of a failed model call", id, it.Seq(), it)
		}
	}

	// What the session holds of the run, position by position.
	stored := make(map[int64]state.Item)
	for seq := int64(1); seq < ck.NextSeq()+3; seq++ {
		it, ok, err := sessions.Lookup(ctx, spec.Session, id, seq)
		if err != nil {
			return false, fmt.Errorf("torture: check: lookup run %s seq %d: %w", id, seq, err)
		}
		if ok {
			stored[seq] = it
		}
	}
	outputs := make(map[string]state.Item) // call ID → stored output
	for seq, it := range stored {
		if it.Kind().IsOutput() {
			outputs[it.CallID()] = it
		}
		if strings.Contains(it.Text(), TripMarker) {
			bad("run %s seq %d: the session holds %s, a final output the output guardrail rejected", id, seq, it)
		}
		if strings.Contains(it.Text(), FailedMarker) {
			bad("run %s seq %d: the session holds %s, of a failed model call", id, seq, it)
		}
		if x, ok := ck.ItemAt(seq); ok {
			if it.Kind().IsOutput() && it.Text() == persistence.WithheldOutput {
				if !spec.Trip || !spec.Finish || x.CallID() != it.CallID() || x.Name() != ToolFinish || !tripped(ck) {
					bad("run %s seq %d: the session holds %s withheld, the checkpoint %s (trip planned %v, tripped %v)", id, seq, it, x, spec.Trip, tripped(ck))
				}
				continue
			}
			if !x.Equal(it) {
				bad("run %s seq %d: the session holds %s, the checkpoint %s", id, seq, it, x)
			}
			continue
		}
		if !it.Kind().IsOutput() {
			bad("run %s seq %d: the session holds %s, which the checkpoint does not have", id, seq, it)
			continue
		}
		if _, done := ck.Completed(it.CallID()); done || !hasCall(ck, it.CallID()) {
			bad("run %s seq %d: the session holds output %s for a call the checkpoint does not hold open", id, seq, it)
		}
	}

	// A run stopped by the tripwire whose finish call the session lacks (in
	// final checks; until then a resume may still store it): persistence's
	// run stage completes the settlement on resume. It is reported once,
	// here; the checks below make allowance for it.
	stopped := tripped(ck)
	var lost string
	if final && stopped && spec.Trip && spec.Finish {
		for _, it := range ck.Items().All() {
			if _, ok := outputs[it.CallID()]; ok || it.Kind() != state.KindToolCall || it.Name() != ToolFinish {
				continue
			}
			lost = it.CallID()
			bad("run %s: the session lacks its finish call %s and its withheld output", id, lost)
		}
	}

	// Side effects against the session.
	byKey := make(map[string][]Execution)
	for _, e := range execs {
		if !slices.Contains(byKey[e.Key], e) {
			byKey[e.Key] = append(byKey[e.Key], e)
		}
	}
	// Lookups whose response was lost: the model was asked again.
	lostLookup := make(map[string]bool)
	for key, es := range byKey {
		callID, ok := strings.CutPrefix(key, id+"/")
		if !ok || callID == lost {
			continue
		}
		if _, committed := outputs[callID]; committed || hasCall(ck, callID) {
			continue
		}
		if !slices.ContainsFunc(es, func(e Execution) bool { return e.Tool != ToolLookup || !killed[e.PID] }) {
			lostLookup[key] = true
			res.LostRetryable++
		}
	}
	logical := make(map[[2]int][]string)
	for _, e := range execs {
		at := [2]int{e.Step, e.Index}
		if !lostLookup[e.Key] && !slices.Contains(logical[at], e.Key) {
			logical[at] = append(logical[at], e.Key)
		}
	}
	for at, keys := range logical {
		if len(keys) > 1 {
			bad("run %s step %d call %d ran under %d idempotency keys %v", id, at[0], at[1], len(keys), keys)
		}
	}
	_, finished := ck.FinalOutput()
	for key, es := range byKey {
		callID, ok := strings.CutPrefix(key, id+"/")
		if ok && callID == lost || lostLookup[key] {
			continue
		}
		if !ok {
			bad("run %s: execution %s has key %q of another run", id, es[0].Exec, key)
			continue
		}
		out, committed := outputs[callID]
		var from string
		if committed && out.Text() == persistence.WithheldOutput {
			// No execution is named: every one but the last was killed.
			n := 0
			for _, e := range es {
				if !killed[e.PID] {
					n++
				}
			}
			if n > 1 {
				bad("run %s call %s: withheld output, and %d executions by processes that were not killed", id, callID, n)
			}
			res.Retries += len(es) - 1
			continue
		}
		if committed && timedOutEarly(out) {
			from = "" // every execution was killed before its commit; the last call timed out before it ran
		} else if committed {
			var o toolOutput
			if out.Text() == RejectMessage || json.Unmarshal([]byte(out.Text()), &o) != nil {
				bad("run %s call %s: ran %d times but its stored output is %q", id, callID, len(es), out.Text())
				continue
			}
			from = o.Exec
			if !slices.ContainsFunc(es, func(e Execution) bool { return e.Exec == from }) {
				bad("run %s call %s: the stored output names execution %s, which is not in the log", id, callID, from)
			}
			switch slow := spec.slow(es[0].Step, es[0].Index); {
			case slow && o.Note != TimedOutNote:
				bad("run %s call %s: a slow lookup's stored output %q is not its timeout", id, callID, out.Text())
			case !slow && o.Note == TimedOutNote:
				bad("run %s call %s: stored output %q is a timeout, but the call was not slow", id, callID, out.Text())
			case slow:
				res.TimedOut++
			}
			res.Retries += len(es) - 1
		} else if final || finished && es[0].Tool != ToolFinish { // a finished run's pending final commit holds the finish output
			bad("run %s call %s: %d executions, none in the session", id, callID, len(es))
		}
		for _, e := range es {
			if e.Exec != from && !killed[e.PID] {
				bad("run %s call %s: execution %s by process %d was not committed and that process was not killed", id, callID, e.Exec, e.PID)
			}
		}
	}
	for callID, out := range outputs {
		if out.Text() == RejectMessage || out.Kind() == state.KindHandoffOutput {
			continue
		}
		if timedOutEarly(out) {
			res.TimedOutEarly++
			continue
		}
		if len(byKey[id+"/"+callID]) == 0 {
			bad("run %s call %s: a stored output %q without an execution", id, callID, out.Text())
		}
	}

	switch {
	case stopped && !spec.Trip:
		bad("run %s: the output guardrail tripped, but its final output was not to trip", id)
	case stopped && finished:
		bad("run %s: the output guardrail tripped, yet the run is finished", id)
	}
	ended := finished || stopped && spec.Trip
	if spec.Pop == PopHistory {
		return checkPoppedHistory(spec, ck, stored, execs, final, res, bad), nil
	}
	if ended {
		for _, out := range outputs {
			switch {
			case out.Kind() == state.KindHandoffOutput:
				res.Handoffs++
			case out.Text() == persistence.WithheldOutput:
				res.Withheld++
			}
		}
	}
	if !final {
		return ended, nil
	}
	if spec.Pop == PopOwn && finished {
		res.PoppedOwn++
	}
	got, _ := ck.FinalOutput()
	switch {
	case spec.Trip && !stopped:
		bad("run %s: not stopped by the output guardrail (finished %v)", id, finished)
	case spec.Trip:
	case !finished:
		bad("run %s: not finished", id)
	case spec.Finish:
		if out, ok := finishOutput(ck, outputs); !ok || got != out.Text() {
			bad("run %s: final output %q, want the stored output of its finish call", id, got)
		}
	case got != spec.Final:
		bad("run %s: final output %q, want %q", id, got, spec.Final)
	}
	if ck.Agent() != spec.FinalAgent() {
		bad("run %s: ended with agent %q, want %q", id, ck.Agent(), spec.FinalAgent())
	}
	wantItems, wantCalls := spec.Items()-popped(spec, plan), spec.Calls()
	if lost != "" {
		wantItems, wantCalls = wantItems-2, wantCalls-1
	}
	if len(stored) != wantItems {
		bad("run %s: the session holds %d items, want %d", id, len(stored), wantItems)
	}
	if len(outputs) != wantCalls {
		bad("run %s: %d outputs stored, want %d", id, len(outputs), wantCalls)
	}
	if n := ck.Items().Len(); !spec.Trip && n > 0 && ck.SessionWatermark() != ck.Items().At(n-1).Seq() {
		bad("run %s: session watermark %d, last item %d", id, ck.SessionWatermark(), ck.Items().At(n-1).Seq())
	}
	if spec.Trip && len(stored) > 0 && ck.SessionWatermark() < slices.Max(slices.Collect(maps.Keys(stored))) {
		last := slices.Max(slices.Collect(maps.Keys(stored)))
		bad("run %s: session watermark %d below its last stored item %d", id, ck.SessionWatermark(), last)
	}
	return ended, nil
}

// popped returns how many of the run's items a worker popped from its
// session (see [WithPops]): a [PopOwn] run's input, which it stored before
// it paused; the last item of a run that a [PopHistory] run starts after.
func popped(spec RunSpec, plan Plan) int {
	if spec.Pop == PopOwn {
		return 1
	}
	for _, r := range plan.Runs {
		if r.After == spec.ID && r.Pop == PopHistory {
			return 1
		}
	}
	return 0
}

// checkPoppedHistory checks a [PopHistory] run, whose session a worker
// popped into its history while it was paused: once paused, it never
// goes on (its resume fails with state.ErrHistoryChanged before the
// model is called, which the torture model also refuses): no tool of it
// ever runs, and with final set it is paused at its transfer, with its
// own items popped. It reports whether the run ended so.
func checkPoppedHistory(spec RunSpec, ck *state.Run, stored map[int64]state.Item, execs []Execution, final bool, res *CheckResult, bad func(string, ...any)) bool {
	id := spec.ID
	if len(execs) > 0 {
		bad("run %s: %d tool executions after a pop into its history", id, len(execs))
	}
	if n, err := lastStep(ck); err != nil || n > 1 {
		bad("run %s: went on to step %d after its pause (%v)", id, n, err)
	}
	if _, finished := ck.FinalOutput(); finished {
		bad("run %s: finished after a pop into its history", id)
	}
	paused := len(ck.Pending()) == 1
	if !final {
		return paused
	}
	switch {
	case !paused:
		bad("run %s: %d pending approvals after a pop into its history, want its transfer", id, len(ck.Pending()))
	case len(stored) != 0:
		bad("run %s: the session holds %d of its items after they were popped", id, len(stored))
	default:
		res.PoppedHistory++
	}
	return paused
}

// finishOutput returns the stored output of the run's finish call.
func finishOutput(run *state.Run, outputs map[string]state.Item) (state.Item, bool) {
	for _, it := range run.Items().All() {
		if it.Kind() == state.KindToolCall && it.Name() == ToolFinish {
			out, ok := outputs[it.CallID()]
			return out, ok
		}
	}
	return state.Item{}, false
}

func hasCall(run *state.Run, callID string) bool {
	for _, it := range run.Items().All() {
		if it.Kind().IsCall() && it.CallID() == callID {
			return true
		}
	}
	return false
}

// slow reports whether the call at index of step is a slow lookup.
func (s RunSpec) slow(step, index int) bool {
	if step < 1 || step > len(s.Steps) || index < 0 || index >= len(s.Steps[step-1]) {
		return false
	}
	return s.Steps[step-1][index].Slow
}

// timedOutEarly reports whether out is the output of a lookup whose time
// limit passed before it began (see [TimedOutEarlyNote]).
func timedOutEarly(out state.Item) bool {
	var o toolOutput
	return out.Name() == ToolLookup && json.Unmarshal([]byte(out.Text()), &o) == nil && o.Note == TimedOutEarlyNote && o.Exec == ""
}
