package tracing_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tracing"
)

// pauseAndResume runs an agent whose tool needs approval until it pauses,
// decides with v on a copy of the state that another runner made from the
// first one's checkpoint (via transfer), and resumes it. It returns the
// spans of the first run and of the resumption.
func pauseAndResume(t *testing.T, v state.Verdict, transfer func(t *testing.T, run *state.Run) *state.Run, opts ...tracing.Option) (first, second []sdktrace.ReadOnlySpan) {
	t.Helper()
	newAgent := func() *pipeline.Agent {
		return toolAgent(
			scripted.Respond(scripted.Call("echo", `{"safe":true}`), scripted.Call("danger", `{"rm":"-rf"}`)),
			scripted.Reply("done"),
		)
	}
	h1 := newHarness(t)
	r1 := pipeline.NewRunner(pipeline.WithMiddleware(h1.middleware(opts...), requireApproval("danger")))
	res, err := r1.Run(context.Background(), newAgent(), pipeline.UserInput("clean up"), pipeline.WithRunID("r"))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !res.Interrupted() {
		t.Fatalf("the run did not pause: %+v", res)
	}
	run := transfer(t, res.State())
	decide(t, run, v)

	// A new runner, as another worker would have, resumes the run. The
	// agent's script continues where the first worker's left off.
	h2 := newHarness(t)
	r2 := pipeline.NewRunner(pipeline.WithMiddleware(h2.middleware(opts...), requireApproval("danger")))
	a := newAgent()
	a.Model = scripted.New(scripted.Reply("done"))
	if _, err := r2.Resume(context.Background(), a, run); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	return h1.ended(), h2.ended()
}

func liveState(_ *testing.T, run *state.Run) *state.Run { return run }

// viaJSON is what another process does: the checkpoint goes through
// state.Marshal and state.Unmarshal.
func viaJSON(t *testing.T, run *state.Run) *state.Run {
	t.Helper()
	data, err := state.Marshal(run)
	if err != nil {
		t.Fatalf("state.Marshal: %v", err)
	}
	out, err := state.Unmarshal(data)
	if err != nil {
		t.Fatalf("state.Unmarshal: %v", err)
	}
	return out
}

func TestResumeFromJSONCheckpointLinks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		opts       []tracing.Option
		wantParent bool
	}{
		{name: "link"},
		{name: "continue trace", opts: []tracing.Option{tracing.WithContinueTrace()}, wantParent: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			first, second := pauseAndResume(t, state.Approved, viaJSON, tt.opts...)
			paused := one(t, first, "invoke_agent helper").SpanContext()
			resumed := one(t, second, "invoke_agent helper")
			got := map[string]bool{
				"linked":    len(resumed.Links()) == 1 && resumed.Links()[0].SpanContext.SpanID() == paused.SpanID() && resumed.Links()[0].SpanContext.TraceID() == paused.TraceID(),
				"parented":  resumed.Parent().SpanID() == paused.SpanID() && resumed.Parent().TraceID() == paused.TraceID(),
				"sameTrace": resumed.SpanContext().TraceID() == paused.TraceID(),
			}
			want := map[string]bool{"linked": !tt.wantParent, "parented": tt.wantParent, "sameTrace": tt.wantParent}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("resumed span relation mismatch (-want +got):\n%s", diff)
			}
			// The resumed run saved its own span for a later resume.
			if n := len(find(second, "execute_tool danger")); n != 1 {
				t.Fatalf("%d danger calls on resume, want 1", n)
			}
		})
	}
}

// TestTraceContextSaved checks the carrier a checkpoint holds: a W3C
// traceparent naming the run's span.
func TestTraceContextSaved(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := pipeline.NewRunner(pipeline.WithMiddleware(h.middleware(), requireApproval("danger")))
	res, err := r.Run(context.Background(), toolAgent(scripted.CallTool("danger", `{}`)), pipeline.UserInput("hi"))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	sc := one(t, h.ended(), "invoke_agent helper").SpanContext()
	want := map[string]string{"traceparent": "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"}
	if diff := cmp.Diff(want, viaJSON(t, res.State()).TraceContext()); diff != "" {
		t.Fatalf("saved trace context mismatch (-want +got):\n%s", diff)
	}
}

func TestResumeLinksToThePausedRun(t *testing.T) {
	t.Parallel()
	first, second := pauseAndResume(t, state.Approved, liveState)
	paused := one(t, first, "invoke_agent helper")
	resumed := one(t, second, "invoke_agent helper")

	if resumed.SpanContext().TraceID() == paused.SpanContext().TraceID() {
		t.Errorf("the resumed run is in the paused run's trace; by default it starts its own and links")
	}
	if len(resumed.Links()) != 1 {
		t.Fatalf("resumed run has %d links, want 1", len(resumed.Links()))
	}
	link := resumed.Links()[0]
	if link.SpanContext.TraceID() != paused.SpanContext().TraceID() || link.SpanContext.SpanID() != paused.SpanContext().SpanID() {
		t.Errorf("link = %v, want the paused run's span %v", link.SpanContext, paused.SpanContext())
	}
	if diff := cmp.Diff(map[string]string{"turnkit.link.type": "resumed_from"}, attrs(link.Attributes)); diff != "" {
		t.Errorf("link attributes mismatch (-want +got):\n%s", diff)
	}
	want := map[string]string{"turnkit.run.resumed": "true", "turnkit.run.outcome": "final_output"}
	if diff := cmp.Diff(want, subset(attrs(resumed.Attributes()), want)); diff != "" {
		t.Errorf("resumed run attributes mismatch (-want +got):\n%s", diff)
	}
	if got := attrs(paused.Attributes())["turnkit.run.outcome"]; got != "interrupted" {
		t.Errorf("paused run outcome = %q, want interrupted", got)
	}
}

func TestResumeContinuesTheTrace(t *testing.T) {
	t.Parallel()
	first, second := pauseAndResume(t, state.Approved, liveState, tracing.WithContinueTrace())
	paused := one(t, first, "invoke_agent helper")
	resumed := one(t, second, "invoke_agent helper")
	if resumed.Parent().SpanID() != paused.SpanContext().SpanID() || resumed.Parent().TraceID() != paused.SpanContext().TraceID() {
		t.Fatalf("resumed parent = %v, want the paused run's span %v", resumed.Parent(), paused.SpanContext())
	}
	if !resumed.Parent().IsRemote() {
		t.Errorf("the parent read from a checkpoint must be remote")
	}
	if len(resumed.Links()) != 0 {
		t.Errorf("resumed run has links %v; with WithContinueTrace it has a parent instead", resumed.Links())
	}
}

func TestApprovalEvents(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		give       state.Verdict
		wantStatus string
	}{
		{name: "approved", give: state.Approved, wantStatus: "completed"},
		{name: "rejected", give: state.Rejected, wantStatus: "rejected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			first, second := pauseAndResume(t, tt.give, liveState)

			pending := one(t, first, "execute_tool danger")
			if diff := cmp.Diff([]string{"turnkit.approval.requested"}, eventNames(pending)); diff != "" {
				t.Fatalf("paused call events mismatch (-want +got):\n%s", diff)
			}
			if got := attrs(pending.Attributes())["turnkit.tool.status"]; got != "pending" {
				t.Errorf("paused call status = %q, want pending", got)
			}
			if got := eventNames(one(t, first, "execute_tool echo")); len(got) != 0 {
				t.Errorf("the safe call has events %v, want none", got)
			}

			decided := one(t, second, "execute_tool danger")
			if diff := cmp.Diff([]string{"turnkit.approval.decision"}, eventNames(decided)); diff != "" {
				t.Fatalf("resumed call events mismatch (-want +got):\n%s", diff)
			}
			wantEvent := map[string]string{
				"turnkit.approval.outcome": tt.give.String(), "gen_ai.tool.name": "danger",
				"gen_ai.tool.call.id": "call_r_1_2", "turnkit.approval.always": "false",
			}
			if diff := cmp.Diff(wantEvent, attrs(decided.Events()[0].Attributes)); diff != "" {
				t.Errorf("decision event mismatch (-want +got):\n%s", diff)
			}
			if got := attrs(decided.Attributes())["turnkit.tool.status"]; got != tt.wantStatus {
				t.Errorf("resumed call status = %q, want %q", got, tt.wantStatus)
			}
			// The resumed turn runs only the call that waited.
			if got := find(second, "execute_tool echo"); len(got) != 0 {
				t.Errorf("the safe call ran again on resume")
			}
		})
	}
}
