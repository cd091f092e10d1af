package state_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/statetest"
)

func TestDecisionsBindToCallAndArguments(t *testing.T) {
	t.Parallel()
	r := statetest.SampleRun(t, "r")
	if err := r.Approve("call_rm"); err != nil {
		t.Fatal(err)
	}
	d, exact, ok := r.DecisionFor("delete_file", "call_rm")
	if !ok || !exact || d.Verdict != state.Approved || d.Fingerprint != state.Fingerprint("delete_file", `{"path":"/tmp/x"}`) {
		t.Fatalf("DecisionFor = %+v, exact %v, ok %v", d, exact, ok)
	}
	if err := d.Check("call_rm", "delete_file", `{"path":"/tmp/x"}`); err != nil {
		t.Errorf("Check(same arguments) = %v", err)
	}
	err := d.Check("call_rm", "delete_file", `{"path":"/"}`)
	var fe *state.FingerprintError
	if !errors.As(err, &fe) || !errors.Is(err, state.ErrArgumentsChanged) || fe.CallID != "call_rm" {
		t.Errorf("Check(other arguments) = %v, want a *FingerprintError", err)
	}
	if _, _, ok := r.DecisionFor("other_tool", "call_rm"); ok {
		t.Error("an exact decision applied to a call of another tool with the same ID")
	}
}

func TestExactDecisionBeatsAlways(t *testing.T) {
	t.Parallel()
	r := statetest.SampleRun(t, "r")
	if err := r.ApproveAlways("delete_file"); err != nil {
		t.Fatal(err)
	}
	if err := r.Reject("call_rm", "no"); err != nil {
		t.Fatal(err)
	}
	if err := r.ApproveAlways("delete_file"); err != nil { // a later always still loses
		t.Fatal(err)
	}
	d, exact, _ := r.DecisionFor("delete_file", "call_rm")
	if !exact || d.Verdict != state.Rejected || d.Message != "no" {
		t.Errorf("DecisionFor = %+v (exact %v), want the exact rejection", d, exact)
	}
	d, exact, _ = r.DecisionFor("delete_file", "call_later")
	if exact || d.Verdict != state.Approved || d.Check("call_later", "delete_file", "{}") != nil {
		t.Errorf("DecisionFor(later call) = %+v (exact %v), want the always approval", d, exact)
	}
	always := 0
	for _, d := range r.Decisions() {
		if d.Always && d.Tool == "delete_file" {
			always++
		}
	}
	if always != 1 {
		t.Errorf("%d always decisions for one tool, want the latest only", always)
	}
}

func TestFailedDecisionsMutateNothing(t *testing.T) {
	t.Parallel()
	r := statetest.SampleRun(t, "r")
	if err := r.Approve("call_rm"); err != nil {
		t.Fatal(err)
	}
	before := snap(r)
	tests := []struct {
		name string
		give func() error
		want error
	}{
		{name: "unknown", give: func() error { return r.Approve("call_nope") }, want: state.ErrUnknownCall},
		{name: "completed call", give: func() error { return r.Approve("call_ls") }, want: state.ErrUnknownCall},
		{name: "twice", give: func() error { return r.Reject("call_rm", "") }, want: state.ErrAlreadyDecided},
		{name: "empty tool", give: func() error { return r.ApproveAlways("") }},
	}
	for _, tt := range tests {
		err := tt.give()
		var de *state.DecisionError
		if !errors.As(err, &de) || (tt.want != nil && !errors.Is(err, tt.want)) {
			t.Errorf("%s: %v, want a *DecisionError wrapping %v", tt.name, err, tt.want)
		}
	}
	if d := cmp.Diff(before, snap(r)); d != "" {
		t.Errorf("failed decisions changed the run:\n%s", d)
	}
}

func TestOwnedApprovals(t *testing.T) {
	t.Parallel()
	r := statetest.SampleRun(t, "r")
	for _, a := range []state.Approval{
		{Tool: "x", CallID: "c1/a", Owner: "c1"},
		{Tool: "x", CallID: "c1/c2/b", Owner: "c1/c2"},
		{Tool: "x", CallID: "c10/a", Owner: "c10"},
	} {
		r.AddPending(a)
	}
	if err := r.Approve("c1/c2/b"); err != nil {
		t.Fatal(err)
	}
	if got := len(r.PendingOwnedBy("c1")); got != 2 {
		t.Errorf("PendingOwnedBy(c1) has %d approvals, want 2 (c10 is another owner)", got)
	}
	if got := r.DecisionsOwnedBy("c1"); len(got) != 1 || got[0].Owner != "c1/c2" {
		t.Errorf("DecisionsOwnedBy(c1) = %+v", got)
	}
	r.ResolveOwned("c1")
	if got := r.Pending(); len(got) != 2 || !r.IsPending("c10/a") || !r.IsPending("call_rm") {
		t.Errorf("after ResolveOwned(c1) pending = %+v", got)
	}
	round, err := state.Unmarshal(mustMarshal(t, r))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(snap(r), snap(round)); d != "" {
		t.Errorf("owned approvals round trip (-want +got):\n%s", d)
	}
}

func TestConcurrentDecisionsOneWins(t *testing.T) {
	t.Parallel()
	r := statetest.SampleRun(t, "r")
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { errs[i] = r.Approve("call_rm") })
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, state.ErrAlreadyDecided):
			t.Errorf("Approve = %v", err)
		}
	}
	if ok != 1 {
		t.Errorf("%d concurrent approvals recorded, want 1", ok)
	}
}

// TestFingerprint pins the digest a decision binds to (sha256 of the tool
// name, a NUL and the arguments, in hex: checkpoints hold it) for short and
// long arguments (longer than the buffer it hashes them in on the stack).
// Its allocations are counted in bench/budget_test.go, without -race.
func TestFingerprint(t *testing.T) {
	for _, args := range []string{`{}`, `{"q":"` + strings.Repeat("é", 1000) + `"}`} {
		sum := sha256.Sum256([]byte("lookup\x00" + args))
		if got, want := state.Fingerprint("lookup", args), hex.EncodeToString(sum[:]); got != want {
			t.Errorf("Fingerprint(lookup, %.20s…) = %s, want %s", args, got, want)
		}
	}
}

// TestWithoutPendingShares: resolving the first or last pending approvals,
// as a resume does call by call, shares the rest of the copy-on-write list
// (no allocation; none when all are resolved), capped at its length, and
// leaves the list it came from as it was; resolving one in the middle
// makes a new list. Checked to fail with the old withoutPending (a clone
// for each) and without the caps (the append below wrote into the shared
// array).
func TestWithoutPendingShares(t *testing.T) { // not parallel: AllocsPerRun
	ap := func(id string, seq int64) state.Approval {
		return state.Approval{Tool: "t", CallID: id, Seq: seq, OutputSeq: seq + 10}
	}
	p := []state.Approval{ap("a", 1), ap("b", 2), ap("c", 3)}
	before := slices.Clone(p)
	ids := func(l []state.Approval) (out []string) {
		for _, a := range l {
			out = append(out, a.CallID)
		}
		return out
	}
	for _, tc := range []struct {
		del    []string
		want   []string
		allocs float64
	}{
		{[]string{"x"}, []string{"a", "b", "c"}, 0},
		{[]string{"a"}, []string{"b", "c"}, 0},
		{[]string{"a", "b"}, []string{"c"}, 0},
		{[]string{"c"}, []string{"a", "b"}, 0},
		{[]string{"b", "c"}, []string{"a"}, 0},
		{[]string{"a", "b", "c"}, nil, 0},
		{[]string{"b"}, []string{"a", "c"}, 1},
		{[]string{"a", "c"}, []string{"b"}, 1},
	} {
		var got []state.Approval
		allocs := testing.AllocsPerRun(20, func() { got = state.WithoutPending(p, tc.del...) })
		if diff := cmp.Diff(tc.want, ids(got)); diff != "" {
			t.Errorf("without %v (-want +got):\n%s", tc.del, diff)
		}
		if allocs != tc.allocs {
			t.Errorf("without %v: %v allocations, want %v", tc.del, allocs, tc.allocs)
		}
		if tc.allocs == 0 && cap(got) != len(got) {
			t.Errorf("without %v: the rest has room past its length (%d of %d): an append would write into the shared list", tc.del, len(got), cap(got))
		}
		_ = append(got, ap("z", 9)) // what addPending's append may do
		if diff := cmp.Diff(before, p); diff != "" {
			t.Errorf("without %v changed the list it came from (-before +after):\n%s", tc.del, diff)
		}
	}
}

// TestCheckRemembersOnlyWhatItHashed: the check of a decision made in this
// process does not hash the arguments again, and still refuses other
// arguments or another tool while the decision's fingerprint is
// remembered. Checked to fail with the memo matched by its fingerprint
// alone, and by its fingerprint and arguments without the tool.
func TestCheckRemembersOnlyWhatItHashed(t *testing.T) {
	t.Parallel()
	r := statetest.SampleRun(t, "r")
	if err := r.Approve("call_rm"); err != nil {
		t.Fatal(err)
	}
	d, _, _ := r.DecisionFor("delete_file", "call_rm")
	for _, c := range []struct{ tool, args string }{
		{"delete_file", `{"path":"/"}`},
		{"delete_files", `{"path":"/tmp/x"}`},
	} {
		if err := d.Check("call_rm", c.tool, c.args); !errors.Is(err, state.ErrArgumentsChanged) {
			t.Errorf("Check(%s, %s) of a remembered decision = %v, want ErrArgumentsChanged", c.tool, c.args, err)
		}
	}
	for range 2 { // remembered, then hashed again
		if err := d.Check("call_rm", "delete_file", `{"path":"/tmp/x"}`); err != nil {
			t.Errorf("Check(the decided arguments) = %v", err)
		}
	}
}
