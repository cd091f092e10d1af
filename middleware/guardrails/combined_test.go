package guardrails_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/middleware/guardrails"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/pipeline/pipelinetest"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/faulty"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
)

// The tests in this file run the guardrails inside the real persistence
// middleware on session/memory (and session/faulty), in the recommended
// order, and check what the session holds after each verdict (invariant 2
// of docs/design.md, seed 001).

const sessionID = "chat"

// sessionItems lists a session as "kind:text" strings.
func sessionItems(t *testing.T, store session.Store) []string {
	t.Helper()
	items, err := store.List(context.Background(), sessionID, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, it.Kind().String()+":"+it.Text())
	}
	return out
}

// runSession runs agent in the session, streamed or not.
func runSession(t *testing.T, ctx context.Context, r *pipeline.Runner, a *pipeline.Agent, stream bool, input string) outcome {
	t.Helper()
	st := state.NewRun("run_test", a.Name)
	out := outcome{state: st}
	opts := []pipeline.RunOption{pipeline.WithState(st), pipeline.WithSessionID(sessionID)}
	if !stream {
		res, err := r.Run(ctx, a, pipeline.UserInput(input), opts...)
		out.err = err
		if res != nil {
			out.final = res.FinalOutput()
		}
		return out
	}
	res, _, err := pipelinetest.Drain(r.Stream(ctx, a, pipeline.UserInput(input), opts...))
	out.err = err
	if err == nil && res != nil {
		out.final = res.FinalOutput()
	}
	return out
}

func tripOn(secret string) guardrails.Check[string] {
	return func(ctx context.Context, _ *pipeline.Agent, out string) (guardrails.Verdict, error) {
		return guardrails.Verdict{Tripwire: out == secret}, nil
	}
}

// TestCombinedOutputVerdicts checks what the session keeps after an output
// guardrail's verdict: a tripwire discards the turn's held-back model
// output and keeps the committed tool items (a terminal tool's pair stays,
// its output withheld); an error keeps everything; a pass keeps the
// original order, a message before a call included.
func TestCombinedOutputVerdicts(t *testing.T) {
	t.Parallel()
	failing := func(ctx context.Context, _ *pipeline.Agent, _ string) (guardrails.Verdict, error) {
		return guardrails.Verdict{}, errBroken
	}
	tests := []struct {
		name      string
		steps     []scripted.Step
		toolUse   pipeline.ToolUseBehavior
		check     guardrails.Check[string]
		wantErr   error
		wantFinal string
		want      []string
		// results recorded: tool input, tool output, and output unless it failed
		wantResults int
	}{
		{
			name:  "tripwire discards the final message and keeps committed tool items",
			steps: []scripted.Step{scripted.CallTool("lookup", `{}`), scripted.Reply("sk-secret")},
			check: tripOn("sk-secret"), wantErr: pipeline.ErrOutputRejected,
			want:        []string{"user_message:hi", "tool_call:{}", "tool_output:ran lookup {}"},
			wantResults: 3,
		},
		{
			name: "tripwire discards the messages of a response with a terminal tool and withholds its output",
			steps: []scripted.Step{scripted.Respond(
				scripted.Think("plan"), scripted.Text("Looking it up."), scripted.Call("lookup", `{}`))},
			toolUse: pipeline.StopOnFirstTool(), check: tripOn("ran lookup {}"), wantErr: pipeline.ErrOutputRejected,
			want:        []string{"user_message:hi", "reasoning:plan", "tool_call:{}", "tool_output:" + persistence.WithheldOutput},
			wantResults: 3,
		},
		{
			name:  "an error keeps the turn's items",
			steps: []scripted.Step{scripted.CallTool("lookup", `{}`), scripted.Reply("fine")},
			check: failing, wantErr: pipeline.ErrGuardrailFailed,
			want:        []string{"user_message:hi", "tool_call:{}", "tool_output:ran lookup {}", "assistant_message:fine"},
			wantResults: 2,
		},
		{
			name: "a pass keeps a message before a call in its place",
			steps: []scripted.Step{
				scripted.Respond(scripted.Text("Let me look."), scripted.Call("lookup", `{}`)), scripted.Reply("done")},
			check: tripOn("never"), wantFinal: "done",
			want:        []string{"user_message:hi", "assistant_message:Let me look.", "tool_call:{}", "tool_output:ran lookup {}", "assistant_message:done"},
			wantResults: 3,
		},
		{
			name:    "a pass keeps a terminal tool's turn in order",
			steps:   []scripted.Step{scripted.Respond(scripted.Text("Looking it up."), scripted.Call("lookup", `{}`))},
			toolUse: pipeline.StopOnFirstTool(), check: tripOn("never"), wantFinal: "ran lookup {}",
			want:        []string{"user_message:hi", "assistant_message:Looking it up.", "tool_call:{}", "tool_output:ran lookup {}"},
			wantResults: 3,
		},
	}
	for _, tt := range tests {
		for _, m := range modes {
			t.Run(tt.name+"/"+m.name, func(t *testing.T) {
				t.Parallel()
				store := newStore(t)
				var tools counter
				agent := &pipeline.Agent{
					Name: "agent", Model: scripted.New(tt.steps...), Tools: []pipeline.Tool{tools.tool("lookup")}, ToolUse: tt.toolUse,
				}
				r := pipeline.NewRunner(pipeline.WithMiddleware(
					persistence.Middleware(store),
					guardrails.ToolInput(allowCall), guardrails.ToolOutput(allowOutcome),
					guardrails.Output(tt.check),
				))
				got := runSession(t, context.Background(), r, agent, m.stream, "hi")
				checkErr(t, got.err, tt.wantErr)
				if got.final != tt.wantFinal {
					t.Errorf("final = %q, want %q", got.final, tt.wantFinal)
				}
				if diff := cmp.Diff(tt.want, sessionItems(t, store)); diff != "" {
					t.Errorf("session (-want +got):\n%s", diff)
				}
				if n := len(got.state.GuardrailResults()); n != tt.wantResults {
					t.Errorf("%d guardrail results, want %d", n, tt.wantResults)
				}
			})
		}
	}
}

// TestCombinedCancelledRun checks that a run cancelled while its output
// guardrail runs appends no model output, and keeps the committed tool
// items.
func TestCombinedCancelledRun(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			store := newStore(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			hang := func(ctx context.Context, _ *pipeline.Agent, _ string) (guardrails.Verdict, error) {
				cancel()
				<-ctx.Done()
				return guardrails.Verdict{}, ctx.Err()
			}
			var tools counter
			agent := &pipeline.Agent{
				Name: "agent", Model: scripted.New(scripted.CallTool("lookup", `{}`), scripted.Reply("late answer")),
				Tools: []pipeline.Tool{tools.tool("lookup")},
			}
			r := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store), guardrails.Output(hang)))
			got := runSession(t, ctx, r, agent, m.stream, "hi")
			checkErr(t, got.err, context.Canceled)
			want := []string{"user_message:hi", "tool_call:{}", "tool_output:ran lookup {}"}
			if diff := cmp.Diff(want, sessionItems(t, store)); diff != "" {
				t.Errorf("session (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCombinedInputTripwire checks that an input tripwire, blocking or
// parallel, keeps the user's input in the session and appends no model
// output, and that no tool ran.
func TestCombinedInputTripwire(t *testing.T) {
	t.Parallel()
	trip := func(ctx context.Context, _ *pipeline.Agent, _ []state.Item) (guardrails.Verdict, error) {
		return guardrails.Trip("unsafe"), nil
	}
	for _, mode := range []struct {
		name string
		opts []guardrails.Option
	}{
		{"blocking", nil},
		{"parallel", []guardrails.Option{guardrails.WithParallel()}},
	} {
		for _, m := range modes {
			t.Run(mode.name+"/"+m.name, func(t *testing.T) {
				t.Parallel()
				store := newStore(t)
				var tools counter
				agent := &pipeline.Agent{
					Name: "agent", Model: scripted.New(scripted.Respond(scripted.Text("Sure."), scripted.Call("lookup", `{}`))),
					Tools: []pipeline.Tool{tools.tool("lookup")},
				}
				r := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store), guardrails.Input(trip, mode.opts...)))
				got := runSession(t, context.Background(), r, agent, m.stream, "do it")
				checkErr(t, got.err, pipeline.ErrInputRejected)
				if diff := cmp.Diff([]string{"user_message:do it"}, sessionItems(t, store)); diff != "" {
					t.Errorf("session (-want +got):\n%s", diff)
				}
				if n := tools.n.Load(); n != 0 {
					t.Errorf("tool ran %d times", n)
				}
			})
		}
	}
}

// TestCombinedToolVerdictsStored checks that persistence stores what the
// tool guardrails made of a call: the rejection message, the replaced
// output.
func TestCombinedToolVerdictsStored(t *testing.T) {
	t.Parallel()
	reject := func(ctx context.Context, _ *pipeline.Agent, c *pipeline.ToolCall) (guardrails.Verdict, error) {
		if c.Name == "delete" {
			return guardrails.RejectCall("Not allowed.", nil), nil
		}
		return guardrails.Verdict{}, nil
	}
	redact := func(ctx context.Context, _ *pipeline.Agent, o pipeline.ToolOutcome) (guardrails.Verdict, error) {
		return guardrails.ReplaceOutput("[redacted]", nil), nil
	}
	store := newStore(t)
	var tools counter
	agent := &pipeline.Agent{
		Name: "agent",
		Model: scripted.New(scripted.Respond(scripted.Call("delete", `{}`), scripted.Call("read", `{}`)),
			scripted.Reply("done")),
		Tools: []pipeline.Tool{tools.tool("delete"), tools.tool("read")},
	}
	r := pipeline.NewRunner(pipeline.WithMiddleware(
		persistence.Middleware(store), guardrails.ToolInput(reject), guardrails.ToolOutput(redact)))
	got := runSession(t, context.Background(), r, agent, false, "hi")
	if got.err != nil {
		t.Fatal(got.err)
	}
	want := []string{"user_message:hi", "tool_call:{}", "tool_call:{}", "tool_output:Not allowed.", "tool_output:[redacted]", "assistant_message:done"}
	if diff := cmp.Diff(want, sessionItems(t, store)); diff != "" {
		t.Errorf("session (-want +got):\n%s", diff)
	}
}

// TestTrippedSettlementCompletesOnResume: a terminal tool's output trips
// the output guardrail, and the append that stores the pair with its
// output withheld fails (before or after the write). Resuming the run
// returns the same tripwire (the guardrail refuses to go on), yet the
// session ends up with the pair, withheld, once: persistence's run stage
// completes the settlement before anything inside it runs.
func TestTrippedSettlementCompletesOnResume(t *testing.T) {
	t.Parallel()
	for _, fault := range []faulty.Fault{faulty.FailBefore(2), faulty.FailAfter(2)} {
		t.Run(fault.Mode.String(), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			store := faulty.New(memory.New(), fault)
			r := pipeline.NewRunner(pipeline.WithMiddleware(
				persistence.Middleware(store),
				guardrails.Output(tripOn("the secret")),
			))
			finish := pipeline.NewTool(pipeline.ToolSpec{Name: "finish"}, func(context.Context, json.RawMessage) (string, error) {
				return "the secret", nil
			})
			a := &pipeline.Agent{
				Name: "a", Model: scripted.New(scripted.CallTool("finish", `{}`)),
				Tools: []pipeline.Tool{finish}, ToolUse: pipeline.StopOnFirstTool(),
			}
			first := runSession(t, ctx, r, a, false, "finish it")
			if !errors.Is(first.err, guardrails.ErrTripwire) || !errors.Is(first.err, faulty.ErrInjected) {
				t.Fatalf("first run: %v, want the tripwire and the injected append failure", first.err)
			}
			st := pipelinetest.RoundTrip(t, first.state)
			_, err := r.Resume(ctx, a, st)
			if !errors.Is(err, guardrails.ErrTripwire) {
				t.Fatalf("resume: %v, want the tripwire again", err)
			}
			want := []string{"user_message:finish it", "tool_call:{}", "tool_output:" + persistence.WithheldOutput}
			if diff := cmp.Diff(want, sessionItems(t, store)); diff != "" {
				t.Errorf("session after resume (-want +got):\n%s", diff)
			}
			if got, last := st.SessionWatermark(), st.NextSeq()-1; got != last {
				t.Errorf("session watermark %d, want %d: the settlement is recorded", got, last)
			}
		})
	}
}
