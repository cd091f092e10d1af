package pipeline_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/pipeline/pipelinetest"
	"github.com/turnkit/turnkit/state"
)

// nestedScenario is an outer agent whose tool is an inner agent whose
// "danger" tool needs approval.
type nestedScenario struct {
	outer, inner *pipeline.Agent
	innerModel   *scripted.Model
	calls        *calls
}

func newNested() nestedScenario {
	c := &calls{}
	im := scripted.New(scripted.CallTool("danger", `{"path":"/tmp/x"}`), scripted.Reply("inner done"))
	inner := &pipeline.Agent{Name: "researcher", Model: im, Tools: []pipeline.Tool{c.tool("danger")}}
	outer := &pipeline.Agent{
		Name:  "boss",
		Model: scripted.New(scripted.Respond(scripted.Call("safe", `{}`), scripted.Call("researcher", `{"input":"look"}`)), scripted.Reply("boss done")),
		Tools: []pipeline.Tool{c.tool("safe"), pipeline.AgentTool(inner)},
	}
	return nestedScenario{outer: outer, inner: inner, innerModel: im, calls: c}
}

// TestAgentToolApprovalSurfacesAndResumes pauses inside a nested run: the
// approval surfaces on the outer run with its owner, the nested state
// travels in the outer checkpoint, and deciding on the outer state resumes
// the nested run (live or serialized, streamed or not).
func TestAgentToolApprovalSurfacesAndResumes(t *testing.T) {
	t.Parallel()
	for _, serialized := range []bool{false, true} {
		for _, stream := range []bool{false, true} {
			sc := newNested()
			r := newRunner(false)
			first := start(t, r, sc.outer, stream)
			if len(first.Interruptions()) != 1 {
				t.Fatalf("interruptions %+v, want the nested one only", first.Interruptions())
			}
			ap := first.Interruptions()[0]
			if ap.Tool != "danger" || ap.Owner != "call_run_1_1_2" || ap.CallID != "call_run_1_1_2/call_run_1-call_run_1_1_2_1_1" || ap.Agent != "researcher" {
				t.Fatalf("nested interruption %+v", ap)
			}
			if sc.calls.count("safe") != 1 || sc.calls.count("danger") != 0 {
				t.Fatalf("before the decision tools ran %v", sc.calls.n)
			}
			st := first.State()
			if _, ok := st.Extension("turnkit.agent_tool/" + "call_run_1_1_2"); !ok {
				t.Fatal("the nested run's state is not in the outer state")
			}
			if err := st.Approve(ap.CallID); err != nil {
				t.Fatal(err)
			}
			if serialized {
				st = pipelinetest.RoundTrip(t, st)
			}
			res := resume(t, r, sc.outer, st, stream)
			if res.FinalOutput() != "boss done" {
				t.Fatalf("final output %q", res.FinalOutput())
			}
			if sc.calls.count("danger") != 1 || sc.calls.count("safe") != 1 {
				t.Errorf("serialized=%v stream=%v: tools ran %v, want each once", serialized, stream, sc.calls.n)
			}
			if _, ok := st.Extension("turnkit.agent_tool/" + "call_run_1_1_2"); ok {
				t.Error("the finished nested run's state is still in the outer state")
			}
			if p := st.Pending(); len(p) != 0 {
				t.Errorf("pending after the run finished: %+v", p)
			}
			out, _ := st.ItemAt(st.Response().End - 1)
			if got := out.Text(); got != "boss done" {
				t.Errorf("last item %q", got)
			}
		}
	}
}

// TestAgentToolUsageCountsOnce adds the nested run's model calls to the
// outer run's usage, each once, across the pause and a JSON round trip.
func TestAgentToolUsageCountsOnce(t *testing.T) {
	t.Parallel()
	sc := newNested()
	r := newRunner(false)
	first := start(t, r, sc.outer, false)
	// The outer model answered once; the nested model once, before the pause.
	if got := first.Usage().Requests; got != 2 {
		t.Fatalf("requests at the pause = %d, want 2 (outer 1 + nested 1)", got)
	}
	st := first.State()
	if err := st.Approve(first.Interruptions()[0].CallID); err != nil {
		t.Fatal(err)
	}
	st = pipelinetest.RoundTrip(t, st)
	res := resume(t, r, sc.outer, st, false)
	// After the resume: the nested model's second answer and the outer
	// model's final one.
	if got := res.Usage().Requests; got != 4 {
		t.Errorf("requests at the end = %d, want 4 (outer 2 + nested 2)", got)
	}
	// The scripted model counts one output token per part: the outer
	// model's 2 calls and 1 reply, the nested model's call and reply.
	if got, want := res.Usage().OutputTokens, int64(5); got != want {
		t.Errorf("output tokens = %d, want %d", got, want)
	}
}

// TestAgentToolStreamsNestedEvents: when the outer run streams, the nested
// run's events reach the outer stream wrapped in NestedEvent, in order and
// between the outer call and its output.
func TestAgentToolStreamsNestedEvents(t *testing.T) {
	t.Parallel()
	inner := &pipeline.Agent{Name: "researcher", Model: scripted.New(scripted.Reply("inner found it"))}
	outer := &pipeline.Agent{
		Name:  "boss",
		Model: scripted.New(scripted.CallTool("researcher", `{"input":"look"}`), scripted.Reply("boss done")),
		Tools: []pipeline.Tool{pipeline.AgentTool(inner)},
	}
	var log []string
	for ev, err := range pipeline.NewRunner().Stream(context.Background(), outer, pipeline.UserInput("go"), pipeline.WithRunID("r")) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev := ev.(type) {
		case pipeline.NestedEvent:
			switch in := ev.Event.(type) {
			case pipeline.TextDelta:
				log = append(log, ev.CallID+"/"+ev.Agent+" delta "+in.Delta)
			case pipeline.ItemCreated:
				log = append(log, ev.CallID+"/"+ev.Agent+" item "+in.Item.Kind().String())
			}
		case pipeline.ItemCreated:
			log = append(log, "item "+ev.Item.Kind().String())
		}
	}
	want := []string{
		"item user_message",
		"item tool_call",
		"call_r_1_1/researcher item user_message",
		"call_r_1_1/researcher delta inner ",
		"call_r_1_1/researcher delta found ",
		"call_r_1_1/researcher delta it",
		"call_r_1_1/researcher item assistant_message",
		"item tool_output",
		"item assistant_message",
	}
	if diff := cmp.Diff(want, log); diff != "" {
		t.Errorf("stream (-want +got):\n%s", diff)
	}
}

// TestAgentToolRejectionReachesTheNestedModel rejects the nested call: the
// inner model sees the message and the tool never runs.
func TestAgentToolRejectionReachesTheNestedModel(t *testing.T) {
	t.Parallel()
	sc := newNested()
	r := newRunner(false)
	first := start(t, r, sc.outer, false)
	st := pipelinetest.RoundTrip(t, first.State())
	if err := st.Reject(first.Interruptions()[0].CallID, "not today"); err != nil {
		t.Fatal(err)
	}
	if res := resume(t, r, sc.outer, st, false); res.FinalOutput() != "boss done" {
		t.Fatalf("final output %q", res.FinalOutput())
	}
	if sc.calls.count("danger") != 0 {
		t.Errorf("rejected nested call ran %d times", sc.calls.count("danger"))
	}
	reqs := sc.innerModel.Calls()
	last := reqs[len(reqs)-1].Input
	if got := last.At(last.Len() - 1).Text(); got != "not today" {
		t.Errorf("inner model saw %q as the call's output, want the rejection", got)
	}
}

// TestAgentToolUndecidedStaysPending resumes without a decision: the
// nested approval is renewed, and an unknown qualified call ID is refused
// without a change.
func TestAgentToolUndecidedStaysPending(t *testing.T) {
	t.Parallel()
	sc := newNested()
	r := newRunner(false)
	first := start(t, r, sc.outer, false)
	st := first.State()
	before, _ := state.Marshal(st)
	if err := st.Approve("call_run_1_1_2/call_9_9"); !errors.Is(err, state.ErrUnknownCall) {
		t.Fatalf("Approve(unknown nested) = %v, want ErrUnknownCall", err)
	}
	if after, _ := state.Marshal(st); string(after) != string(before) {
		t.Fatal("a refused decision changed the state")
	}
	again := resume(t, r, sc.outer, st, false)
	if len(again.Interruptions()) != 1 || again.Interruptions()[0].CallID != first.Interruptions()[0].CallID {
		t.Fatalf("renewed interruptions %+v", again.Interruptions())
	}
	if sc.calls.count("danger") != 0 || sc.calls.count("safe") != 1 {
		t.Fatalf("tools ran %v", sc.calls.n)
	}
	if err := st.Approve(again.Interruptions()[0].CallID); err != nil {
		t.Fatal(err)
	}
	if res := resume(t, r, sc.outer, pipelinetest.RoundTrip(t, st), false); res.FinalOutput() != "boss done" || sc.calls.count("danger") != 1 {
		t.Fatalf("final %q, danger ran %d times", res.FinalOutput(), sc.calls.count("danger"))
	}
}

// TestAgentToolTwoLevels nests an agent tool inside an agent tool: the
// approval is qualified once per level and resumes through both.
func TestAgentToolTwoLevels(t *testing.T) {
	t.Parallel()
	c := &calls{}
	leaf := &pipeline.Agent{Name: "leaf", Model: scripted.New(scripted.CallTool("danger", `{}`), scripted.Reply("leaf done")), Tools: []pipeline.Tool{c.tool("danger")}}
	mid := &pipeline.Agent{Name: "mid", Model: scripted.New(scripted.CallTool("leaf", `{"input":"go"}`), scripted.Reply("mid done")), Tools: []pipeline.Tool{pipeline.AgentTool(leaf)}}
	top := &pipeline.Agent{Name: "top", Model: scripted.New(scripted.CallTool("mid", `{"input":"go"}`), scripted.Reply("top done")), Tools: []pipeline.Tool{pipeline.AgentTool(mid)}}
	r := newRunner(false)
	first := start(t, r, top, false)
	if len(first.Interruptions()) != 1 || strings.Count(first.Interruptions()[0].CallID, "/") != 2 {
		t.Fatalf("interruptions %+v, want one qualified twice", first.Interruptions())
	}
	st := pipelinetest.RoundTrip(t, first.State())
	if err := st.Approve(first.Interruptions()[0].CallID); err != nil {
		t.Fatal(err)
	}
	if res := resume(t, r, top, st, true); res.FinalOutput() != "top done" || c.count("danger") != 1 {
		t.Fatalf("final %q, danger ran %d times", res.FinalOutput(), c.count("danger"))
	}
}
