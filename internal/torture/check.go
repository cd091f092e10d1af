package torture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// A CheckResult is what [Check] found.
type CheckResult struct {
	Runs     int `json:"runs"`
	Finished int `json:"finished"`
	// Executions counts tool executions in the effect log for the plan's
	// runs; Retries those that ran again under the same idempotency key
	// because an earlier execution crashed before its commit.
	Executions int `json:"executions"`
	Retries    int `json:"retries"`
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
//   - every stored tool output comes from an execution of that call, a
//     rejected call never ran, and a call ran more than once only if each
//     earlier execution was in a process that was killed before the call's
//     commit (these retries are counted);
//   - one logical call (run, step, index) ran under one idempotency key;
//   - with final set: every run is finished with its final output, its
//     session holds all its items, and every execution is committed.
//
// killed holds the IDs of the processes the torture loop killed.
func Check(ctx context.Context, sessions session.Store, states state.Store, plan Plan, execs []Execution, killed map[int]bool, final bool) (CheckResult, error) {
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
		fin, err := checkRun(ctx, sessions, states, spec, byRun[spec.ID], killed, final, &res, bad)
		if err != nil {
			return res, err
		}
		if fin {
			res.Finished++
		}
	}
	return res, nil
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

// checkRun checks one run; it reports whether the run is finished.
func checkRun(ctx context.Context, sessions session.Store, states state.Store, spec RunSpec, execs []Execution, killed map[int]bool, final bool, res *CheckResult, bad func(string, ...any)) (bool, error) {
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
		if x, ok := ck.ItemAt(seq); ok {
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

	// Side effects against the session.
	byKey := make(map[string][]Execution)
	logical := make(map[[2]int][]string)
	for _, e := range execs {
		if !slices.Contains(byKey[e.Key], e) {
			byKey[e.Key] = append(byKey[e.Key], e)
		}
		at := [2]int{e.Step, e.Index}
		if !slices.Contains(logical[at], e.Key) {
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
		if !ok {
			bad("run %s: execution %s has key %q of another run", id, es[0].Exec, key)
			continue
		}
		out, committed := outputs[callID]
		var from string
		if committed {
			var o toolOutput
			if out.Text() == RejectMessage || json.Unmarshal([]byte(out.Text()), &o) != nil {
				bad("run %s call %s: ran %d times but its stored output is %q", id, callID, len(es), out.Text())
				continue
			}
			from = o.Exec
			if !slices.ContainsFunc(es, func(e Execution) bool { return e.Exec == from }) {
				bad("run %s call %s: the stored output names execution %s, which is not in the log", id, callID, from)
			}
			res.Retries += len(es) - 1
		} else if finished || final {
			bad("run %s call %s: %d executions, none in the session", id, callID, len(es))
		}
		for _, e := range es {
			if e.Exec != from && !killed[e.PID] {
				bad("run %s call %s: execution %s by process %d was not committed and that process was not killed", id, callID, e.Exec, e.PID)
			}
		}
	}
	for callID, out := range outputs {
		if out.Text() == RejectMessage {
			continue
		}
		if len(byKey[id+"/"+callID]) == 0 {
			bad("run %s call %s: a stored output %q without an execution", id, callID, out.Text())
		}
	}

	if !final {
		return finished, nil
	}
	got, _ := ck.FinalOutput()
	switch {
	case !finished:
		bad("run %s: not finished", id)
	case got != spec.Final:
		bad("run %s: final output %q, want %q", id, got, spec.Final)
	}
	if len(stored) != spec.Items() {
		bad("run %s: the session holds %d items, want %d", id, len(stored), spec.Items())
	}
	if len(outputs) != spec.Calls() {
		bad("run %s: %d outputs stored, want %d", id, len(outputs), spec.Calls())
	}
	if n := ck.Items().Len(); n > 0 && ck.SessionWatermark() != ck.Items().At(n-1).Seq() {
		bad("run %s: session watermark %d, last item %d", id, ck.SessionWatermark(), ck.Items().At(n-1).Seq())
	}
	return finished, nil
}

func hasCall(run *state.Run, callID string) bool {
	for _, it := range run.Items().All() {
		if it.Kind().IsCall() && it.CallID() == callID {
			return true
		}
	}
	return false
}
