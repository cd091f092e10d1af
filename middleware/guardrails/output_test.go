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

type outputCheck = guardrails.Check[string]

func passOutput(ctx context.Context, _ *pipeline.Agent, _ string) (guardrails.Verdict, error) {
	return guardrails.Verdict{}, nil
}

// TestOutputChecksConcurrently checks several output checks in one
// guardrail: they run at once, the first tripwire cancels the rest (whose
// cancellation is no error), a tripwire outranks an error, and results are
// recorded in check order whatever order they finished in.
func TestOutputChecksConcurrently(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		build       func() pipeline.Middleware
		wantErr     error
		wantTripped string
		wantResults []state.GuardrailResult
	}{
		{
			name: "first tripwire cancels the rest",
			build: func() pipeline.Middleware {
				slow := func(ctx context.Context, _ *pipeline.Agent, _ string) (guardrails.Verdict, error) {
					<-ctx.Done()
					return guardrails.Verdict{}, ctx.Err()
				}
				trip := func(ctx context.Context, _ *pipeline.Agent, _ string) (guardrails.Verdict, error) {
					return guardrails.Trip(nil), nil
				}
				return guardrails.Output(slow, guardrails.WithName("slow"), guardrails.WithCheck[string]("trip", trip))
			},
			wantErr: guardrails.ErrTripwire, wantTripped: "trip",
			wantResults: []state.GuardrailResult{{Name: "trip", Stage: state.StageOutput, Turn: 1, Tripped: true}},
		},
		{
			name: "a tripwire outranks an earlier error",
			build: func() pipeline.Middleware {
				failed := make(chan struct{})
				fail := func(ctx context.Context, _ *pipeline.Agent, _ string) (guardrails.Verdict, error) {
					defer close(failed)
					return guardrails.Verdict{}, errBroken
				}
				trip := func(ctx context.Context, _ *pipeline.Agent, _ string) (guardrails.Verdict, error) {
					<-failed // answers after the error, ignoring the cancellation
					return guardrails.Trip(nil), nil
				}
				return guardrails.Output(fail, guardrails.WithName("fail"), guardrails.WithCheck[string]("trip", trip))
			},
			wantErr: guardrails.ErrTripwire, wantTripped: "trip",
			wantResults: []state.GuardrailResult{{Name: "trip", Stage: state.StageOutput, Turn: 1, Tripped: true}},
		},
		{
			name: "results in check order",
			build: func() pipeline.Middleware {
				second := make(chan struct{})
				a := func(ctx context.Context, _ *pipeline.Agent, _ string) (guardrails.Verdict, error) {
					<-second
					return guardrails.Pass("a"), nil
				}
				b := func(ctx context.Context, _ *pipeline.Agent, _ string) (guardrails.Verdict, error) {
					defer close(second)
					return guardrails.Pass("b"), nil
				}
				return guardrails.Output(a, guardrails.WithName("a"), guardrails.WithCheck[string]("b", b))
			},
			wantResults: []state.GuardrailResult{
				{Name: "a", Stage: state.StageOutput, Turn: 1, Info: raw(`"a"`)},
				{Name: "b", Stage: state.StageOutput, Turn: 1, Info: raw(`"b"`)},
			},
		},
	}
	for _, tt := range tests {
		for _, m := range modes {
			t.Run(tt.name+"/"+m.name, func(t *testing.T) {
				t.Parallel()
				agent := &pipeline.Agent{Name: "agent", Model: scripted.New(scripted.Reply("done"))}
				got := runOnce(t, pipeline.NewRunner(pipeline.WithMiddleware(tt.build())), agent, m.stream, "hi")
				checkErr(t, got.err, tt.wantErr)
				te, _ := errors.AsType[*guardrails.TripwireError](got.err)
				if name := guardrailOf(te); name != tt.wantTripped {
					t.Errorf("tripped guardrail = %q, want %q", name, tt.wantTripped)
				}
				if diff := cmp.Diff(tt.wantResults, got.state.GuardrailResults()); diff != "" {
					t.Errorf("results (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func guardrailOf(te *guardrails.TripwireError) string {
	if te == nil {
		return ""
	}
	return te.Guardrail
}

// TestOutputOnlyOnFinalTurns checks that an output guardrail sees only the
// final output, of the final agent: after tool turns, after a handoff, and
// when a terminal tool's output ends the run.
func TestOutputOnlyOnFinalTurns(t *testing.T) {
	t.Parallel()
	var tools counter
	specialist := &pipeline.Agent{Name: "specialist", Model: scripted.New(scripted.Reply("from the specialist"))}
	tests := []struct {
		name     string
		agent    *pipeline.Agent
		wantSeen []string
		wantTurn int
	}{
		{
			name: "after tool turns",
			agent: &pipeline.Agent{
				Name:  "agent",
				Model: scripted.New(scripted.CallTool("echo", "{}"), scripted.CallTool("echo", "{}"), scripted.Reply("done")),
				Tools: []pipeline.Tool{tools.tool("echo")},
			},
			wantSeen: []string{"agent:done"}, wantTurn: 3,
		},
		{
			name: "after a handoff",
			agent: &pipeline.Agent{
				Name:     "triage",
				Model:    scripted.New(scripted.CallTool(pipeline.HandoffToolName("specialist"), "{}")),
				Handoffs: []pipeline.Handoff{{Agent: specialist}},
			},
			wantSeen: []string{"specialist:from the specialist"}, wantTurn: 2,
		},
		{
			name: "terminal tool",
			agent: &pipeline.Agent{
				Name:    "agent",
				Model:   scripted.New(scripted.Respond(scripted.Text("calling"), scripted.Call("echo", `{"v":1}`))),
				Tools:   []pipeline.Tool{tools.tool("echo")},
				ToolUse: pipeline.StopOnFirstTool(),
			},
			wantSeen: []string{`agent:ran echo {"v":1}`}, wantTurn: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p probe
			check := func(ctx context.Context, a *pipeline.Agent, out string) (guardrails.Verdict, error) {
				p.see(a.Name + ":" + out)
				return guardrails.Verdict{}, nil
			}
			got := runOnce(t, pipeline.NewRunner(pipeline.WithMiddleware(guardrails.Output(check))), tt.agent, false, "hi")
			if got.err != nil {
				t.Fatal(got.err)
			}
			if diff := cmp.Diff(tt.wantSeen, p.got()); diff != "" {
				t.Errorf("check saw (-want +got):\n%s", diff)
			}
			want := []state.GuardrailResult{{Name: "output", Stage: state.StageOutput, Turn: tt.wantTurn}}
			if diff := cmp.Diff(want, got.state.GuardrailResults()); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOutputGuardrailsCompose checks two output guardrails as separate
// middleware: both record, and a tripwire in the inner one reaches the
// outer one as an error, so the outer does not run.
func TestOutputGuardrailsCompose(t *testing.T) {
	t.Parallel()
	var outer, inner outputCheck = passOutput, func(ctx context.Context, _ *pipeline.Agent, out string) (guardrails.Verdict, error) {
		return guardrails.Verdict{Tripwire: out == "bad"}, nil
	}
	tests := []struct {
		name  string
		reply string
		want  []string
	}{
		{name: "both pass", reply: "good", want: []string{"inner:false", "outer:false"}},
		{name: "inner trips", reply: "bad", want: []string{"inner:true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := pipeline.NewRunner(pipeline.WithMiddleware(
				guardrails.Output(outer, guardrails.WithName("outer")),
				guardrails.Output(inner, guardrails.WithName("inner")),
			))
			got := runOnce(t, r, &pipeline.Agent{Name: "a", Model: scripted.New(scripted.Reply(tt.reply))}, false, "hi")
			var names []string
			for _, r := range got.state.GuardrailResults() {
				names = append(names, r.Name+":"+map[bool]string{true: "true", false: "false"}[r.Tripped])
			}
			if diff := cmp.Diff(tt.want, names); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
		})
	}
}
