package guardrails_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/guardrails"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/faulty"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
)

// seed000 builds the seed 000 scenario on store: two approval-gated calls
// in one response, guarded by a tool input and a tool output guardrail,
// inside approval, inside persistence.
func seed000(store session.Store) (*pipeline.Runner, *pipeline.Agent, *counter) {
	tools := &counter{}
	agent := &pipeline.Agent{
		Name: "agent",
		Model: scripted.New(
			scripted.Respond(scripted.Call("danger", `{"n":1}`), scripted.Call("danger", `{"n":2}`)),
			scripted.Reply("done")),
		Tools: []pipeline.Tool{tools.tool("danger")},
	}
	r := pipeline.NewRunner(pipeline.WithMiddleware(
		persistence.Middleware(store),
		approval.Require(approval.ByTool("danger")),
		guardrails.ToolInput(allowCall), guardrails.ToolOutput(allowOutcome),
	))
	return r, agent, tools
}

// appendsToPause returns how many appends the scenario makes up to its
// first pause, so that a fault can target the resumed turn's append.
func appendsToPause(t *testing.T, stream bool) int {
	t.Helper()
	store := faulty.New(memory.New())
	t.Cleanup(func() { _ = store.Close() })
	r, agent, _ := seed000(store)
	if got := runSession(t, context.Background(), r, agent, stream, "hi"); got.err != nil {
		t.Fatal(got.err)
	}
	return store.Appends()
}

// TestSeed000 is seed 000 with the real approval and persistence
// middleware: a resumed turn approves one call while the other stays
// pending, and its session append fails (before or after the write). The
// approved call's tool input and output results are in the live state and
// after a JSON round trip; the recovery resume, which rejects the second
// call, does not run the approved tool or its guardrails again; the final
// state reports the results once, and the session holds every item once.
func TestSeed000(t *testing.T) {
	t.Parallel()
	want := []state.GuardrailResult{
		{Name: "tool_input", Stage: state.StageToolInput, Turn: 1, CallID: "call_run_test_1_1", Behavior: "allow"},
		{Name: "tool_output", Stage: state.StageToolOutput, Turn: 1, CallID: "call_run_test_1_1", Behavior: "allow"},
	}
	wantSession := []string{
		"user_message:hi", `tool_call:{"n":1}`, `tool_call:{"n":2}`,
		`tool_output:ran danger {"n":1}`, "tool_output:Tool execution was not approved.", "assistant_message:done",
	}
	faults := []struct {
		name  string
		fault func(n int) faulty.Fault
	}{
		{"before write", faulty.FailBefore},
		{"after write", faulty.FailAfter},
	}
	for _, f := range faults {
		for _, k := range keeps {
			for _, m := range modes {
				t.Run(f.name+"/"+k.name+"/"+m.name, func(t *testing.T) {
					t.Parallel()
					store := faulty.New(memory.New(), f.fault(appendsToPause(t, m.stream)+1))
					t.Cleanup(func() { _ = store.Close() })
					r, agent, tools := seed000(store)
					ctx := context.Background()

					got := runSession(t, ctx, r, agent, m.stream, "hi")
					if got.err != nil || len(got.state.Pending()) != 2 {
						t.Fatalf("run = %v with %d pending, want two pending", got.err, len(got.state.Pending()))
					}
					if err := got.state.Approve("call_run_test_1_1"); err != nil {
						t.Fatal(err)
					}
					res := resumeOnce(t, r, agent, m.stream, got.state)
					if !errors.Is(res.err, faulty.ErrInjected) {
						t.Fatalf("resume err = %v, want the injected append failure", res.err)
					}
					if diff := cmp.Diff(want, got.state.GuardrailResults()); diff != "" {
						t.Fatalf("live results after the failed append (-want +got):\n%s", diff)
					}
					st := k.keep(t, got.state)
					if diff := cmp.Diff(want, st.GuardrailResults()); diff != "" {
						t.Fatalf("kept results (-want +got):\n%s", diff)
					}

					if err := st.Reject("call_run_test_1_2", ""); err != nil {
						t.Fatal(err)
					}
					res = resumeOnce(t, r, agent, m.stream, st)
					if res.err != nil || res.final != "done" {
						t.Fatalf("recovery resume = %q, %v", res.final, res.err)
					}
					if diff := cmp.Diff(want, st.GuardrailResults()); diff != "" {
						t.Errorf("final results (-want +got):\n%s", diff)
					}
					if n := tools.n.Load(); n != 1 {
						t.Errorf("the approved tool ran %d times, want 1", n)
					}
					if diff := cmp.Diff(wantSession, sessionItems(t, store)); diff != "" {
						t.Errorf("session (-want +got):\n%s", diff)
					}
				})
			}
		}
	}
}
