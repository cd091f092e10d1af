package guardrails_test

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/guardrails"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

var errAppend = errors.New("append failed")

// failResumedTurnOnce fails the first resumed turn after it was served, as a
// session append outside the guardrails would.
func failResumedTurnOnce() pipeline.Middleware {
	var failed atomic.Bool
	return pipeline.Middleware{Name: "fail", Turn: func(next pipeline.Handler) pipeline.Handler {
		return pipeline.HandlerFunc(func(ctx context.Context, t *pipeline.Turn) error {
			if err := next.ServeTurn(ctx, t); err != nil {
				return err
			}
			if t.Resumed && failed.CompareAndSwap(false, true) {
				return errAppend
			}
			return nil
		})
	}}
}

func allowCall(ctx context.Context, _ *pipeline.Agent, _ *pipeline.ToolCall) (guardrails.Verdict, error) {
	return guardrails.Verdict{}, nil
}

func allowOutcome(ctx context.Context, _ *pipeline.Agent, _ pipeline.ToolOutcome) (guardrails.Verdict, error) {
	return guardrails.Verdict{}, nil
}

// TestResumedResultsSurviveALaterFailure is seed 000 at the guardrail
// level: a resumed turn approves one of two paused calls while the other
// stays pending, and a later stage of the turn fails. The approved call's
// tool input and output results are in the live state and after a JSON
// round trip; the recovery resume, which rejects the second call, does not
// run them again, and the final state reports them once.
func TestResumedResultsSurviveALaterFailure(t *testing.T) {
	t.Parallel()
	want := []state.GuardrailResult{
		{Name: "tool_input", Stage: state.StageToolInput, Turn: 1, CallID: "call_run_test_1_1", Behavior: "allow"},
		{Name: "tool_output", Stage: state.StageToolOutput, Turn: 1, CallID: "call_run_test_1_1", Behavior: "allow"},
	}
	for _, rt := range keeps {
		for _, m := range modes {
			t.Run(rt.name+"/"+m.name, func(t *testing.T) {
				t.Parallel()
				var tools counter
				agent := &pipeline.Agent{
					Name:  "agent",
					Model: scripted.New(scripted.Respond(scripted.Call("danger", `{"n":1}`), scripted.Call("danger", `{"n":2}`)), scripted.Reply("done")),
					Tools: []pipeline.Tool{tools.tool("danger")},
				}
				r := pipeline.NewRunner(pipeline.WithMiddleware(
					failResumedTurnOnce(), approval.Require(approval.ByTool("danger")),
					guardrails.ToolInput(allowCall), guardrails.ToolOutput(allowOutcome),
				))
				got := runOnce(t, r, agent, m.stream, "hi")
				if got.err != nil || len(got.state.Pending()) != 2 {
					t.Fatalf("run = %v with %d pending; want two pending", got.err, len(got.state.Pending()))
				}
				mustDecide(t, got.state.Approve("call_run_test_1_1"))
				res := resumeOnce(t, r, agent, m.stream, got.state)
				checkErr(t, res.err, errAppend)
				if diff := gocmp.Diff(want, got.state.GuardrailResults()); diff != "" {
					t.Fatalf("live results after the failure (-want +got):\n%s", diff)
				}
				st := rt.keep(t, got.state)
				if diff := gocmp.Diff(want, st.GuardrailResults()); diff != "" {
					t.Fatalf("kept results (-want +got):\n%s", diff)
				}
				mustDecide(t, st.Reject("call_run_test_1_2", ""))
				res = resumeOnce(t, r, agent, m.stream, st)
				if res.err != nil || res.final != "done" {
					t.Fatalf("recovery resume = %q, %v", res.final, res.err)
				}
				if diff := gocmp.Diff(want, st.GuardrailResults()); diff != "" {
					t.Errorf("final results (-want +got):\n%s", diff)
				}
				if n := tools.n.Load(); n != 1 {
					t.Errorf("the approved tool ran %d times, want 1", n)
				}
			})
		}
	}
}

// TestBeforeApproval checks how a tool input guardrail before approval
// counts beside one at execution: each records one result per call it
// checks; the one before approval checks on the turn the call was made and
// never on resume, the one at execution checks calls that run, when they
// run. A rejection before approval answers the call without pausing.
func TestBeforeApproval(t *testing.T) {
	t.Parallel()
	check := func(ctx context.Context, _ *pipeline.Agent, c *pipeline.ToolCall) (guardrails.Verdict, error) {
		if c.Arguments == `{"rm":"/"}` {
			return guardrails.RejectCall("Refused before approval.", nil), nil
		}
		return guardrails.Verdict{}, nil
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			var tools counter
			agent := &pipeline.Agent{
				Name: "agent",
				Model: scripted.New(
					scripted.Respond(scripted.Call("safe", "{}"), scripted.Call("danger", `{"rm":"tmp"}`), scripted.Call("danger", `{"rm":"/"}`)),
					scripted.Reply("done")),
				Tools: []pipeline.Tool{tools.tool("safe"), tools.tool("danger")},
			}
			r := pipeline.NewRunner(pipeline.WithMiddleware(
				guardrails.ToolInput(check, guardrails.BeforeApproval()),
				approval.Require(approval.ByTool("danger")),
				guardrails.ToolInput(check),
			))
			got := runOnce(t, r, agent, m.stream, "hi")
			if got.err != nil {
				t.Fatal(got.err)
			}
			if diff := gocmp.Diff([]string{"call_run_test_1_2"}, callIDs(got.state.Pending())); diff != "" {
				t.Fatalf("pending (-want +got):\n%s", diff)
			}
			mustDecide(t, got.state.Approve("call_run_test_1_2"))
			if res := resumeOnce(t, r, agent, m.stream, got.state); res.err != nil || res.final != "done" {
				t.Fatalf("resume = %q, %v", res.final, res.err)
			}
			before, at := "tool_input_before_approval", "tool_input"
			want := []state.GuardrailResult{
				{Name: before, Stage: state.StageToolInput, Turn: 1, CallID: "call_run_test_1_1", Behavior: "allow"},
				{Name: at, Stage: state.StageToolInput, Turn: 1, CallID: "call_run_test_1_1", Behavior: "allow"},
				{Name: before, Stage: state.StageToolInput, Turn: 1, CallID: "call_run_test_1_2", Behavior: "allow"},
				{Name: before, Stage: state.StageToolInput, Turn: 1, CallID: "call_run_test_1_3", Behavior: "reject", Message: "Refused before approval."},
				{Name: at, Stage: state.StageToolInput, Turn: 1, CallID: "call_run_test_1_2", Behavior: "allow"},
			}
			// Concurrent calls record in any order; compare by call and name.
			if diff := gocmp.Diff(sortResults(want), sortResults(got.state.GuardrailResults())); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
			if out := outputText(t, got.state, "call_run_test_1_3"); out != "Refused before approval." {
				t.Errorf("rejected call output = %q", out)
			}
			if n := tools.n.Load(); n != 2 {
				t.Errorf("tools ran %d times, want 2", n)
			}
		})
	}
}

func mustDecide(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func callIDs(as []state.Approval) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.CallID)
	}
	return out
}

func sortResults(rs []state.GuardrailResult) []state.GuardrailResult {
	out := append([]state.GuardrailResult(nil), rs...)
	slices.SortStableFunc(out, func(a, b state.GuardrailResult) int {
		return cmp.Compare(a.CallID+"/"+a.Name, b.CallID+"/"+b.Name)
	})
	return out
}
