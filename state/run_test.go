package state_test

import (
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/turnkit/turnkit/state"
)

func kindTexts(v state.Items) []string {
	var out []string
	for _, it := range v.All() {
		out = append(out, strconv.FormatInt(it.Seq(), 10)+":"+it.Kind().String()+":"+it.Text())
	}
	return out
}

func TestRunPositions(t *testing.T) {
	r := state.NewRun("run_1", "a")
	placed := r.AddInput(state.UserMessage("hi"))
	if placed[0].Seq() != 1 || r.NextSeq() != 2 {
		t.Fatalf("input placed at %d, next %d; want 1, 2", placed[0].Seq(), r.NextSeq())
	}
	first := r.Reserve(3) // a call, and a message, then the call's output
	if first != 2 || r.NextSeq() != 5 {
		t.Fatalf("Reserve(3) = %d, next %d; want 2, 5", first, r.NextSeq())
	}
	call := state.ToolCall("fc", "call_1", "t", `{}`).WithSeq(2)
	msg := state.AssistantMessage("m", "ok").WithSeq(3)
	if err := r.Record(call, msg); err != nil {
		t.Fatal(err)
	}
	before := r.Items()
	if _, done := r.Completed("call_1"); done {
		t.Error("call_1 completed before its output")
	}
	if err := r.Record(state.ToolOutput("call_1", "t", "out").WithSeq(4)); err != nil {
		t.Fatal(err)
	}
	if seq, done := r.Completed("call_1"); !done || seq != 4 {
		t.Errorf("Completed(call_1) = %d, %v; want 4, true", seq, done)
	}
	if before.Len() != 3 {
		t.Errorf("a view taken before an append grew to %d items", before.Len())
	}

	errs := []struct {
		name string
		item state.Item
	}{
		{"unreserved", state.UserMessage("x").WithSeq(5)},
		{"zero position", state.UserMessage("x")},
		{"taken", state.UserMessage("x").WithSeq(3)},
		{"invalid kind", state.Item{}.WithSeq(2)},
	}
	for _, e := range errs {
		if err := r.Record(e.item); err == nil {
			t.Errorf("%s: Record accepted %s", e.name, e.item)
		}
	}
	want := []string{"1:user_message:hi", "2:tool_call:{}", "3:assistant_message:ok", "4:tool_output:out"}
	if diff := cmp.Diff(want, kindTexts(r.Items())); diff != "" {
		t.Errorf("items after refused records (-want +got):\n%s", diff)
	}
	if it, ok := r.ItemAt(3); !ok || it.Text() != "ok" {
		t.Errorf("ItemAt(3) = %s, %v", it, ok)
	}
	if _, ok := r.ItemAt(99); ok {
		t.Error("ItemAt(99) found an item")
	}
}

// TestItemAtAroundGaps reads positions of a run whose items have a gap (a
// call's reserved output not recorded yet): positions before the first,
// in the gap, after it and past the last.
func TestItemAtAroundGaps(t *testing.T) {
	r := state.NewRun("run_1", "a")
	r.AddInput(state.UserMessage("hi"))
	first := r.Reserve(3) // a call, its output (left open), a message
	if err := r.Record(state.ToolCall("fc", "c1", "t", `{}`).WithSeq(first),
		state.AssistantMessage("m", "after").WithSeq(first+2)); err != nil {
		t.Fatal(err)
	}
	want := map[int64]string{0: "", 1: "hi", 2: "{}", 3: "", 4: "after", 5: ""}
	for seq, text := range want {
		it, ok := r.ItemAt(seq)
		if ok != (text != "") || it.Text() != text {
			t.Errorf("ItemAt(%d) = %s, %v; want %q", seq, it, ok, text)
		}
		if ok && it.Seq() != seq {
			t.Errorf("ItemAt(%d) returned the item at %d", seq, it.Seq())
		}
	}
}

// TestRecordBeforeLastKeepsViews records an output decided later at a
// position before the last item: it lands in order, and views taken
// earlier are unchanged.
func TestRecordBeforeLastKeepsViews(t *testing.T) {
	r := state.NewRun("run_1", "a")
	r.AddInput(state.UserMessage("hi"))
	first := r.Reserve(2)
	if err := r.Record(state.ToolCall("fc", "c1", "t", `{}`).WithSeq(first)); err != nil {
		t.Fatal(err)
	}
	next := r.Reserve(1)
	if err := r.Record(state.AssistantMessage("m", "later").WithSeq(next)); err != nil {
		t.Fatal(err)
	}
	old := r.Items()
	oldInput := r.ModelInput()
	if err := r.Record(state.ToolOutput("c1", "t", "late output").WithSeq(first + 1)); err != nil {
		t.Fatal(err)
	}
	want := []string{"1:user_message:hi", "2:tool_call:{}", "3:tool_output:late output", "4:assistant_message:later"}
	if diff := cmp.Diff(want, kindTexts(r.Items())); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	wantOld := []string{"1:user_message:hi", "2:tool_call:{}", "4:assistant_message:later"}
	if diff := cmp.Diff(wantOld, kindTexts(old)); diff != "" {
		t.Errorf("earlier view changed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantOld, kindTexts(oldInput)); diff != "" {
		t.Errorf("earlier model input changed (-want +got):\n%s", diff)
	}
}

func TestModelInput(t *testing.T) {
	r := state.NewRun("run_1", "a")
	r.SetHistory([]state.Item{state.UserMessage("old question"), state.AssistantMessage("m0", "old answer")})
	r.AddInput(state.UserMessage("new question"))
	if diff := cmp.Diff([]string{"0:user_message:old question", "0:assistant_message:old answer", "1:user_message:new question"}, kindTexts(r.ModelInput())); diff != "" {
		t.Errorf("ModelInput with history (-want +got):\n%s", diff)
	}
	r.ReplaceContext([]state.Item{state.UserMessage("summary")})
	seq := r.Reserve(1)
	if err := r.Record(state.AssistantMessage("m1", "answer").WithSeq(seq)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"0:user_message:summary", "2:assistant_message:answer"}, kindTexts(r.ModelInput())); diff != "" {
		t.Errorf("ModelInput after ReplaceContext (-want +got):\n%s", diff)
	}
	if r.Items().Len() != 2 {
		t.Errorf("ReplaceContext changed the run's own items: %d", r.Items().Len())
	}
	h := r.History()
	h[0] = state.UserMessage("changed")
	if r.History()[0].Text() != "summary" {
		t.Error("History() is not a copy")
	}
}

// populated returns a run with something in every field.
func populated(t *testing.T) *state.Run {
	t.Helper()
	r := state.NewRun("run_1", "a")
	r.SetMaxTurns(5)
	r.AddInput(state.UserMessage("hi"))
	first := r.Reserve(4) // two calls and their outputs
	if err := r.Record(state.ToolCall("fc1", "c1", "t", `{"x":1}`).WithSeq(first), state.ToolCall("fc2", "c2", "t", `{"x":2}`).WithSeq(first+1)); err != nil {
		t.Fatal(err)
	}
	r.SetResponse(state.Boundary{Start: first, End: first + 2, OutputsEnd: first + 4})
	r.AddPending(state.Approval{Tool: "t", CallID: "c2", Arguments: `{"x":2}`, Seq: first + 1, OutputSeq: first + 3})
	r.AddDecision(state.Decision{Tool: "t", CallID: "c2", Verdict: state.Approved})
	r.AddUsage(state.Usage{Requests: 1, InputTokens: 10})
	r.SetTraceContext(map[string]string{"traceparent": "00-abc"})
	r.SetExtension("ext", json.RawMessage(`{"k":1}`))
	r.SetHistory([]state.Item{state.UserMessage("before")})
	r.SetSessionID("s1")
	return r
}

type runView struct {
	Items     []string
	Input     []string
	History   []string
	Pending   []state.Approval
	Decisions []state.Decision
	Usage     state.Usage
	Trace     map[string]string
	Ext       string
	Agent     string
	Turn      int
	Final     string
}

func viewRun(r *state.Run) runView {
	ext, _ := r.Extension("ext")
	final, _ := r.FinalOutput()
	return runView{
		Items: kindTexts(r.Items()), Input: kindTexts(state.CopyItems(r.Input())), History: kindTexts(state.CopyItems(r.History())),
		Pending: r.Pending(), Decisions: r.Decisions(), Usage: r.Usage(), Trace: r.TraceContext(), Ext: string(ext),
		Agent: r.Agent(), Turn: r.Turn(), Final: final,
	}
}

// TestCloneSharesNothing changes a clone in every way and checks the
// original, and the other way round (seed 003).
func TestCloneSharesNothing(t *testing.T) {
	change := func(t *testing.T, r *state.Run) {
		seq := r.Response().End + 1
		if err := r.Record(state.ToolOutput("c2", "t", "done").WithSeq(seq)); err != nil {
			t.Fatal(err)
		}
		r.ResolvePending("c2")
		r.AddDecision(state.Decision{Tool: "t", Always: true, Verdict: state.Rejected})
		r.AddUsage(state.Usage{Requests: 1})
		r.SetTraceContext(map[string]string{"traceparent": "00-def"})
		r.SetExtension("ext", json.RawMessage(`{"k":2}`))
		r.SetHistory(nil)
		r.SetAgent("b")
		r.SetTurn(4)
		r.Finish("the end")
	}
	orig := populated(t)
	want := viewRun(orig)
	clone := orig.Clone()
	if diff := cmp.Diff(want, viewRun(clone)); diff != "" {
		t.Fatalf("clone differs from the original (-orig +clone):\n%s", diff)
	}
	change(t, clone)
	if diff := cmp.Diff(want, viewRun(orig)); diff != "" {
		t.Errorf("changing the clone changed the original (-before +after):\n%s", diff)
	}

	orig2 := populated(t)
	clone2 := orig2.Clone()
	change(t, orig2)
	if diff := cmp.Diff(want, viewRun(clone2)); diff != "" {
		t.Errorf("changing the original changed the clone (-before +after):\n%s", diff)
	}
}

// TestCloneSharesNoArray: Clone shares the lists a run never changes in
// place (items, input, pending approvals, model calls), capped at their
// length. Each copy then records an item at the same free position,
// replaces the pending approval of one call and adds one before it: each
// copy sees only its own changes, whichever copy went first, before and
// after the other's.
//
// Checked to fail without the caps (the second copy's item overwrote the
// first's in the shared array) and with addPending replacing a record in
// place (the other copy's approval changed with it).
func TestCloneSharesNoArray(t *testing.T) {
	t.Parallel()
	change := func(t *testing.T, r *state.Run, who string) {
		t.Helper()
		seq := r.Response().Start + 2 // c1's output position, free in both copies
		if err := r.Record(state.ToolOutput("c1", "t", who).WithSeq(seq)); err != nil {
			t.Fatal(err)
		}
		r.AddPending(state.Approval{Tool: "t", CallID: "c2", Arguments: who, Seq: seq - 1, OutputSeq: seq + 1})
		r.AddPending(state.Approval{Tool: "t", CallID: "c0:" + who, Arguments: who, Seq: 1, OutputSeq: 2})
		r.AddModelCall(state.ModelCall{Turn: 2, Agent: who})
	}
	view := func(r *state.Run) runView {
		v := viewRun(r)
		for _, c := range r.ModelCalls() {
			v.Items = append(v.Items, "call:"+c.Agent)
		}
		return v
	}
	for _, first := range []string{"clone", "original"} {
		t.Run(first+" first", func(t *testing.T) {
			t.Parallel()
			orig := populated(t)
			orig.AddModelCall(state.ModelCall{Turn: 1, Agent: "a"})
			clone := orig.Clone()
			order := []*state.Run{clone, orig}
			if first == "original" {
				order = []*state.Run{orig, clone}
			}
			want := view(clone)
			change(t, order[0], "one")
			if diff := cmp.Diff(want, view(order[1])); diff != "" {
				t.Errorf("changing the %s changed the other copy (-before +after):\n%s", first, diff)
			}
			change(t, order[1], "two")

			for i, r := range order {
				alone := populated(t)
				alone.AddModelCall(state.ModelCall{Turn: 1, Agent: "a"})
				change(t, alone, []string{"one", "two"}[i])
				if diff := cmp.Diff(view(alone), view(r)); diff != "" {
					t.Errorf("copy %d changed by the other (-alone +shared):\n%s", i+1, diff)
				}
			}
		})
	}
}

// TestCloneDecisionsDetached: a run whose decisions hold an "always"
// decision is cloned, and one copy decides again on that tool, which
// replaces the decision in place. The other copy keeps its own decisions,
// whichever copy decided.
//
// Checked to fail without it by letting Clone share the decisions slice:
// the clone's RejectAlways compacted the shared array and overwrote the
// original's decisions.
func TestCloneDecisionsDetached(t *testing.T) {
	t.Parallel()
	for _, decider := range []string{"clone", "original"} {
		t.Run(decider+" decides", func(t *testing.T) {
			t.Parallel()
			orig := state.NewRun("run_1", "a")
			for _, tool := range []string{"t", "u"} {
				if err := orig.ApproveAlways(tool); err != nil {
					t.Fatal(err)
				}
			}
			want := orig.Decisions()
			clone := orig.Clone()
			changed, kept := clone, orig
			if decider == "original" {
				changed, kept = orig, clone
			}
			if err := changed.RejectAlways("t", "no"); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, kept.Decisions()); diff != "" {
				t.Errorf("deciding on the %s changed the other copy's decisions (-before +after):\n%s", decider, diff)
			}
			if d, exact, ok := kept.DecisionFor("t", "call_1"); !ok || exact || d.Verdict != state.Approved {
				t.Errorf("the other copy's decision for t = %+v, %v, %v; want its own always approval", d, exact, ok)
			}
			if d, _, _ := changed.DecisionFor("t", "call_1"); d.Verdict != state.Rejected {
				t.Errorf("the deciding copy's decision for t = %+v, want the new rejection", d)
			}
		})
	}
}

func TestAccessorsReturnCopies(t *testing.T) {
	r := populated(t)
	in := r.Input()
	in[0] = state.UserMessage("changed")
	p := r.Pending()
	p[0].Arguments = "changed"
	d := r.Decisions()
	d[0].Verdict = state.Rejected
	tc := r.TraceContext()
	tc["traceparent"] = "changed"
	ext, _ := r.Extension("ext")
	ext[0] = 'X'
	if diff := cmp.Diff(viewRun(populated(t)), viewRun(r)); diff != "" {
		t.Errorf("mutating returned values changed the run (-want +got):\n%s", diff)
	}
}

// TestConcurrentRecord records parallel outputs at reserved positions.
func TestConcurrentRecord(t *testing.T) {
	const n = 32
	r := state.NewRun("run_1", "a")
	first := r.Reserve(n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := "c" + strconv.Itoa(i)
			if err := r.Record(state.ToolOutput(id, "t", id).WithSeq(first + int64(i))); err != nil {
				t.Error(err)
			}
			_ = r.Items().Len()
			_, _ = r.Completed(id)
		})
	}
	wg.Wait()
	items := r.Items()
	if items.Len() != n {
		t.Fatalf("%d items, want %d", items.Len(), n)
	}
	for i, it := range items.All() {
		if it.Seq() != first+int64(i) {
			t.Errorf("item %d at %d, want positions in order", i, it.Seq())
		}
	}
}

// TestSetHistoryAfterResponse tests that the context the model saw cannot
// be replaced: once a response is placed, SetHistory fails with
// ErrContextSeen and the model input stays as it was.
func TestSetHistoryAfterResponse(t *testing.T) {
	r := state.NewRun("run_h", "a")
	if err := r.SetHistory([]state.Item{state.UserMessage("before")}); err != nil {
		t.Fatalf("SetHistory on a new run: %v", err)
	}
	r.AddInput(state.UserMessage("now"))
	if _, err := r.Place([]state.Item{state.AssistantMessage("m1", "answer")}, 0); err != nil {
		t.Fatal(err)
	}
	before := r.ModelInput()
	err := r.SetHistory([]state.Item{state.UserMessage("rewritten")})
	if !errors.Is(err, state.ErrContextSeen) {
		t.Fatalf("SetHistory after a response: err = %v, want ErrContextSeen", err)
	}
	after := r.ModelInput()
	if after.Len() != before.Len() || after.At(0).Text() != "before" {
		t.Fatalf("model input changed by a refused SetHistory: %d items, first %q", after.Len(), after.At(0).Text())
	}
}

// TestPlaceRefusesWhole tests that a response with an item of no kind is
// refused whole: no position is taken and no item recorded.
func TestPlaceRefusesWhole(t *testing.T) {
	r := state.NewRun("run_p", "a")
	items := []state.Item{state.AssistantMessage("m1", "fine"), {}}
	if _, err := r.Place(items, 1); err == nil {
		t.Fatal("Place accepted an item with no kind")
	}
	if r.Len() != 0 || r.NextSeq() != 1 || r.Response() != (state.Boundary{}) {
		t.Fatalf("a refused Place changed the run: len %d, next %d, response %+v", r.Len(), r.NextSeq(), r.Response())
	}
	b, err := r.Place(items[:1], 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := (state.Boundary{Start: 1, End: 2, OutputsEnd: 4}); b != want || r.Response() != want || r.NextSeq() != 4 {
		t.Fatalf("Place = %+v (run %+v, next %d), want %+v and next 4", b, r.Response(), r.NextSeq(), want)
	}
	if got := items[0].Seq(); got != 1 {
		t.Fatalf("placed item has position %d, want 1", got)
	}
}

// TestCompletedIndexBuiltOnDemand: recording outputs writes no index of
// them until one is asked for (the Runner's turn asks by position); the
// index built then, and kept from then on, answers as one kept from the
// start: a reused call ID's latest output, whatever order the outputs
// were recorded in, on the run and on its clone.
func TestCompletedIndexBuiltOnDemand(t *testing.T) {
	build := func() *state.Run {
		r := state.NewRun("run_1", "a")
		first := r.Reserve(6) // call, call, call (ID reused), and their outputs
		if err := r.Record(
			state.ToolCall("fc1", "call_1", "t", `{}`).WithSeq(first),
			state.ToolCall("fc2", "call_2", "t", `{}`).WithSeq(first+1),
			state.ToolCall("fc3", "call_1", "t", `{}`).WithSeq(first+2),
			state.ToolOutput("call_1", "t", "later").WithSeq(first+5),
		); err != nil {
			t.Fatal(err)
		}
		// Decided on resume: before the last item, so inserted.
		if err := r.Record(state.ToolOutput("call_1", "t", "first").WithSeq(first + 3)); err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := build()
	if state.CompletedIndexed(r) {
		t.Fatal("recording outputs built the index of outputs before anyone asked")
	}
	if seq, ok := r.Completed("call_1"); !ok || seq != 6 {
		t.Errorf("Completed(call_1) = %d, %v; want 6 (the latest output), true", seq, ok)
	}
	if !state.CompletedIndexed(r) {
		t.Fatal("Completed did not keep the index it built")
	}
	if _, ok := r.Completed("call_2"); ok {
		t.Error("call_2 completed before its output")
	}
	clone := r.Clone()
	if err := r.Record(state.ToolOutput("call_2", "t", "two").WithSeq(5)); err != nil {
		t.Fatal(err)
	}
	if seq, ok := r.Completed("call_2"); !ok || seq != 5 {
		t.Errorf("after its output, Completed(call_2) = %d, %v; want 5, true", seq, ok)
	}
	if _, ok := clone.Completed("call_2"); ok {
		t.Error("the clone sees an output recorded on the run after it was made")
	}
	call := state.ToolCall("fc2", "call_2", "t", `{}`).WithSeq(2)
	if out, ok := build().Answered(call); ok {
		t.Errorf("Answered(call_2) on a fresh run = %v; want none", out)
	}
	if out, ok := r.Answered(call); !ok || out.Text() != "two" {
		t.Errorf("Answered(call_2) = %v, %v; want its output", out, ok)
	}
}

// TestCoreBatchedOps: the core's one-lock operations do what the
// operations they batch do: a response placed with its usage and model
// call (usage kept when placing fails), an output recorded unless one of
// its call holds its position, its pending approval resolved, and a turn
// started unless it passes the limit.
func TestCoreBatchedOps(t *testing.T) {
	r := state.NewRun("run_1", "a")
	if n, ok := r.NextTurn(1); !ok || n != 1 {
		t.Fatalf("NextTurn(1) = %d, %v; want 1, true", n, ok)
	}
	if n, ok := r.NextTurn(1); ok || n != 2 || r.Turn() != 1 {
		t.Fatalf("NextTurn(1) past the limit = %d, %v (turn %d); want 2, false (turn 1)", n, ok, r.Turn())
	}
	u := state.Usage{Requests: 1, InputTokens: 7}
	if _, err := r.PlaceModelResponse([]state.Item{{}}, 0, u, state.ModelCall{Turn: 1}); err == nil {
		t.Fatal("placed an item without a kind")
	}
	if got := r.Usage(); got != u || len(r.ModelCalls()) != 0 || r.NextSeq() != 1 {
		t.Fatalf("after a refused placing: usage %+v, %d model calls, next %d; want the usage kept and nothing placed", got, len(r.ModelCalls()), r.NextSeq())
	}
	items := []state.Item{state.AssistantMessage("m", "hi"), state.ToolCall("fc", "call_1", "t", `{}`)}
	b, err := r.PlaceModelResponse(items, 1, u, state.ModelCall{Turn: 1, ResponseID: "resp_1", Usage: u})
	if err != nil {
		t.Fatal(err)
	}
	if b != (state.Boundary{Start: 1, End: 3, OutputsEnd: 4}) || r.Response() != b {
		t.Fatalf("boundary %+v, run's %+v; want [1, 3) and outputs to 4", b, r.Response())
	}
	if calls := r.ModelCalls(); len(calls) != 1 || calls[0].Seq != 1 || calls[0].ResponseID != "resp_1" || r.Usage().InputTokens != 14 {
		t.Fatalf("model calls %+v, usage %+v; want one at position 1 and the usage added twice", calls, r.Usage())
	}
	r.AddPending(state.Approval{Tool: "t", CallID: "call_1", Arguments: `{}`, Seq: 2, OutputSeq: 3})
	out := state.ToolOutput("call_1", "t", "ok").WithSeq(3)
	if recorded, err := r.RecordOutput(out); err != nil || !recorded {
		t.Fatalf("RecordOutput = %v, %v; want recorded", recorded, err)
	}
	if r.IsPending("call_1") {
		t.Error("the recorded call is still pending")
	}
	if recorded, err := r.RecordOutput(state.ToolOutput("call_1", "t", "again").WithSeq(3)); err != nil || recorded {
		t.Fatalf("RecordOutput over its call's output = %v, %v; want not recorded, no error", recorded, err)
	}
	if it, _ := r.ItemAt(3); it.Text() != "ok" {
		t.Errorf("output at 3 = %q; want the first", it.Text())
	}
	if _, err := r.RecordOutput(state.ToolOutput("call_2", "t", "x").WithSeq(3)); err == nil {
		t.Error("recorded another call's output at a taken position")
	}
}
