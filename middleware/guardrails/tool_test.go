package guardrails_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/middleware/guardrails"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// outputText returns the text of the output item of the call.
func outputText(t *testing.T, st *state.Run, callID string) string {
	t.Helper()
	seq, ok := st.Completed(callID)
	if !ok {
		t.Fatalf("call %s has no output", callID)
	}
	it, _ := st.ItemAt(seq)
	return it.Text()
}

// TestToolBehaviors checks that a tool input guardrail's rejection answers
// the call without running the tool, and that a tool output guardrail's
// replacement is what the model sees; both go on with the run.
func TestToolBehaviors(t *testing.T) {
	t.Parallel()
	reject := guardrails.ToolInput(func(ctx context.Context, _ *pipeline.Agent, c *pipeline.ToolCall) (guardrails.Verdict, error) {
		return guardrails.RejectCall("Blocked by policy.", map[string]string{"rule": "no-echo"}), nil
	}, guardrails.WithName("policy"))
	replace := guardrails.ToolOutput(func(ctx context.Context, _ *pipeline.Agent, o pipeline.ToolOutcome) (guardrails.Verdict, error) {
		return guardrails.ReplaceOutput("[redacted]", nil), nil
	}, guardrails.WithName("redact"))
	tests := []struct {
		name        string
		mw          pipeline.Middleware
		wantOutput  string
		wantTools   int64
		wantResults []state.GuardrailResult
	}{
		{
			name: "tool input rejects", mw: reject, wantOutput: "Blocked by policy.", wantTools: 0,
			wantResults: []state.GuardrailResult{{
				Name: "policy", Stage: state.StageToolInput, Turn: 1, CallID: "call_run_test_1_1",
				Behavior: "reject", Message: "Blocked by policy.", Info: raw(`{"rule":"no-echo"}`),
			}},
		},
		{
			name: "tool output replaces", mw: replace, wantOutput: "[redacted]", wantTools: 1,
			wantResults: []state.GuardrailResult{{
				Name: "redact", Stage: state.StageToolOutput, Turn: 1, CallID: "call_run_test_1_1",
				Behavior: "replace", Message: "[redacted]",
			}},
		},
	}
	for _, tt := range tests {
		for _, m := range modes {
			t.Run(tt.name+"/"+m.name, func(t *testing.T) {
				t.Parallel()
				var tools counter
				model := scripted.New(scripted.CallTool("echo", `{}`), scripted.Reply("done"))
				agent := &pipeline.Agent{Name: "agent", Model: model, Tools: []pipeline.Tool{tools.tool("echo")}}
				got := runOnce(t, pipeline.NewRunner(pipeline.WithMiddleware(tt.mw)), agent, m.stream, "hi")
				if got.err != nil || got.final != "done" {
					t.Fatalf("run = %q, %v; want done", got.final, got.err)
				}
				if out := outputText(t, got.state, "call_run_test_1_1"); out != tt.wantOutput {
					t.Errorf("output = %q, want %q", out, tt.wantOutput)
				}
				if seen := model.Calls()[1].Input.At(2).Text(); seen != tt.wantOutput {
					t.Errorf("the model saw %q, want %q", seen, tt.wantOutput)
				}
				if n := tools.n.Load(); n != tt.wantTools {
					t.Errorf("tool ran %d times, want %d", n, tt.wantTools)
				}
				if diff := cmp.Diff(tt.wantResults, got.state.GuardrailResults()); diff != "" {
					t.Errorf("results (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestToolChecksCombine checks several checks in one tool guardrail: a
// tripwire beats a rejection, and the first rejection in check order gives
// the message; every check that answered is recorded, in check order.
func TestToolChecksCombine(t *testing.T) {
	t.Parallel()
	allow := func(ctx context.Context, _ *pipeline.Agent, _ *pipeline.ToolCall) (guardrails.Verdict, error) {
		return guardrails.Verdict{Behavior: guardrails.Allow}, nil
	}
	rejectWith := func(msg string) guardrails.Check[*pipeline.ToolCall] {
		return func(ctx context.Context, _ *pipeline.Agent, _ *pipeline.ToolCall) (guardrails.Verdict, error) {
			return guardrails.RejectCall(msg, nil), nil
		}
	}
	var tools counter
	agent := &pipeline.Agent{
		Name: "agent", Model: scripted.New(scripted.CallTool("echo", `{}`), scripted.Reply("done")),
		Tools: []pipeline.Tool{tools.tool("echo")},
	}
	mw := guardrails.ToolInput(allow, guardrails.WithName("a"),
		guardrails.WithCheck("b", rejectWith("first")), guardrails.WithCheck("c", rejectWith("second")))
	got := runOnce(t, pipeline.NewRunner(pipeline.WithMiddleware(mw)), agent, false, "hi")
	if got.err != nil {
		t.Fatal(got.err)
	}
	if out := outputText(t, got.state, "call_run_test_1_1"); out != "first" {
		t.Errorf("output = %q, want the first rejection's message", out)
	}
	want := []state.GuardrailResult{
		{Name: "a", Stage: state.StageToolInput, Turn: 1, CallID: "call_run_test_1_1", Behavior: "allow"},
		{Name: "b", Stage: state.StageToolInput, Turn: 1, CallID: "call_run_test_1_1", Behavior: "reject", Message: "first"},
		{Name: "c", Stage: state.StageToolInput, Turn: 1, CallID: "call_run_test_1_1", Behavior: "reject", Message: "second"},
	}
	if diff := cmp.Diff(want, got.state.GuardrailResults()); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if tools.n.Load() != 0 {
		t.Error("a rejected call ran")
	}
}

// TestToolGuardrailsPerCall checks that the calls of one response are
// checked each once, with their own call IDs, and that a tripwire on one
// call aborts the run.
func TestToolGuardrailsPerCall(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			check := func(ctx context.Context, _ *pipeline.Agent, o pipeline.ToolOutcome) (guardrails.Verdict, error) {
				if o.Call.Name == "leak" {
					return guardrails.Trip(o.Result.Output), nil
				}
				return guardrails.Verdict{}, nil
			}
			var tools counter
			agent := &pipeline.Agent{
				Name: "agent",
				Model: scripted.New(scripted.Respond(
					scripted.Call("echo", `{"n":1}`), scripted.Call("leak", `{"n":2}`))),
				Tools: []pipeline.Tool{tools.tool("echo"), tools.tool("leak")},
			}
			got := runOnce(t, pipeline.NewRunner(pipeline.WithMiddleware(guardrails.ToolOutput(check))), agent, m.stream, "hi")
			te, ok := errors.AsType[*guardrails.TripwireError](got.err)
			if !ok || te.CallID != "call_run_test_1_2" || te.Info != `ran leak {"n":2}` {
				t.Fatalf("err = %v, want a tool_output tripwire on call_run_test_1_2", got.err)
			}
			byCall := map[string]bool{}
			for _, r := range got.state.GuardrailResults() {
				byCall[r.CallID] = r.Tripped
			}
			if diff := cmp.Diff(map[string]bool{"call_run_test_1_1": false, "call_run_test_1_2": true}, byCall); diff != "" {
				t.Errorf("results by call (-want +got):\n%s", diff)
			}
		})
	}
}
