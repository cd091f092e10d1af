package guardrails_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/middleware/guardrails"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// answer is what a test check answers, whatever it is shown.
type answer struct {
	v   guardrails.Verdict
	err error
}

// probe records what a check was shown.
type probe struct {
	mu   sync.Mutex
	seen []string
}

func (p *probe) see(s string) {
	p.mu.Lock()
	p.seen = append(p.seen, s)
	p.mu.Unlock()
}

func (p *probe) got() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

// kindsOfGuardrail builds each kind of guardrail around a check that
// answers a and tells p what it was shown.
var kindsOfGuardrail = []struct {
	name     string
	build    func(a answer, p *probe) pipeline.Middleware
	stage    state.GuardrailStage
	turn     int
	callID   string
	behavior string // recorded for a passing check
	wantSeen []string
	// what a tripwire or an error leaves
	stopTools int64
	stopKinds []string
}{
	{
		name: "input", stage: state.StageInput, turn: 1, wantSeen: []string{"user_message:hello"},
		build: func(a answer, p *probe) pipeline.Middleware {
			return guardrails.Input(func(ctx context.Context, _ *pipeline.Agent, in []state.Item) (guardrails.Verdict, error) {
				for _, it := range in {
					p.see(it.Kind().String() + ":" + it.Text())
				}
				return a.v, a.err
			})
		},
		stopTools: 0, stopKinds: []string{"user_message"},
	},
	{
		name: "output", stage: state.StageOutput, turn: 2, wantSeen: []string{"agent:done"},
		build: func(a answer, p *probe) pipeline.Middleware {
			return guardrails.Output(func(ctx context.Context, ag *pipeline.Agent, out string) (guardrails.Verdict, error) {
				p.see(ag.Name + ":" + out)
				return a.v, a.err
			})
		},
		stopTools: 1, stopKinds: []string{"user_message", "tool_call", "tool_output", "assistant_message"},
	},
	{
		name: "tool_input", stage: state.StageToolInput, turn: 1, callID: "call_run_test_1_1", behavior: "allow",
		wantSeen: []string{`echo{"x":1}`},
		build: func(a answer, p *probe) pipeline.Middleware {
			return guardrails.ToolInput(func(ctx context.Context, _ *pipeline.Agent, c *pipeline.ToolCall) (guardrails.Verdict, error) {
				p.see(c.Name + c.Arguments)
				return a.v, a.err
			})
		},
		stopTools: 0, stopKinds: []string{"user_message", "tool_call"},
	},
	{
		name: "tool_output", stage: state.StageToolOutput, turn: 1, callID: "call_run_test_1_1", behavior: "allow",
		wantSeen: []string{`call_run_test_1_1:ran echo {"x":1}`},
		build: func(a answer, p *probe) pipeline.Middleware {
			return guardrails.ToolOutput(func(ctx context.Context, _ *pipeline.Agent, o pipeline.ToolOutcome) (guardrails.Verdict, error) {
				p.see(o.Call.CallID + ":" + o.Result.Output)
				return a.v, a.err
			})
		},
		stopTools: 1, stopKinds: []string{"user_message", "tool_call"},
	},
}

// TestKinds runs each kind of guardrail passing, tripping and failing, plain
// and streamed, on a run of a tool turn and a final message.
func TestKinds(t *testing.T) {
	t.Parallel()
	passInfo := map[string]bool{"ok": true}
	tripInfo := map[string]string{"reason": "bad"}
	for _, k := range kindsOfGuardrail {
		passed := state.GuardrailResult{
			Name: k.name, Stage: k.stage, Turn: k.turn, CallID: k.callID, Behavior: k.behavior, Info: raw(`{"ok":true}`),
		}
		tripped := state.GuardrailResult{
			Name: k.name, Stage: k.stage, Turn: k.turn, CallID: k.callID, Tripped: true, Info: raw(`{"reason":"bad"}`),
		}
		tests := []struct {
			name        string
			give        answer
			wantErr     error
			wantResults []state.GuardrailResult
			wantFinal   string
			wantTools   int64
			wantKinds   []string
		}{
			{
				name: "pass", give: answer{v: guardrails.Pass(passInfo)},
				wantResults: []state.GuardrailResult{passed}, wantFinal: "done", wantTools: 1,
				wantKinds: []string{"user_message", "tool_call", "tool_output", "assistant_message"},
			},
			{
				name: "tripwire", give: answer{v: guardrails.Trip(tripInfo)}, wantErr: guardrails.ErrTripwire,
				wantResults: []state.GuardrailResult{tripped}, wantTools: k.stopTools, wantKinds: k.stopKinds,
			},
			{
				name: "error", give: answer{err: errBroken}, wantErr: guardrails.ErrCheck,
				wantTools: k.stopTools, wantKinds: k.stopKinds,
			},
		}
		for _, tt := range tests {
			for _, m := range modes {
				t.Run(k.name+"/"+tt.name+"/"+m.name, func(t *testing.T) {
					t.Parallel()
					var (
						tools counter
						p     probe
					)
					agent := &pipeline.Agent{
						Name:  "agent",
						Model: scripted.New(scripted.CallTool("echo", `{"x":1}`), scripted.Reply("done")),
						Tools: []pipeline.Tool{tools.tool("echo")},
					}
					r := pipeline.NewRunner(pipeline.WithMiddleware(k.build(tt.give, &p)))
					got := runOnce(t, r, agent, m.stream, "hello")
					checkErr(t, got.err, tt.wantErr)
					if diff := cmp.Diff(tt.wantResults, got.state.GuardrailResults()); diff != "" {
						t.Errorf("results (-want +got):\n%s", diff)
					}
					if got.final != tt.wantFinal {
						t.Errorf("final output = %q, want %q", got.final, tt.wantFinal)
					}
					if n := tools.n.Load(); n != tt.wantTools {
						t.Errorf("tool ran %d times, want %d", n, tt.wantTools)
					}
					if diff := cmp.Diff(tt.wantKinds, kinds(got.state)); diff != "" {
						t.Errorf("items (-want +got):\n%s", diff)
					}
					if diff := cmp.Diff(k.wantSeen, p.got()); diff != "" {
						t.Errorf("check saw (-want +got):\n%s", diff)
					}
				})
			}
		}
	}
}

// TestTripwireError checks what a tripwire error names and carries.
func TestTripwireError(t *testing.T) {
	t.Parallel()
	trip := func(ctx context.Context, _ *pipeline.Agent, _ string) (guardrails.Verdict, error) {
		return guardrails.Trip("secret"), nil
	}
	agent := &pipeline.Agent{Name: "agent", Model: scripted.New(scripted.Reply("sk-123"))}
	r := pipeline.NewRunner(pipeline.WithMiddleware(guardrails.Output(trip, guardrails.WithName("no_secrets"))))
	got := runOnce(t, r, agent, false, "hi")
	te, ok := errors.AsType[*guardrails.TripwireError](got.err)
	if !ok {
		t.Fatalf("err = %v, want a *TripwireError", got.err)
	}
	want := state.GuardrailResult{Name: "no_secrets", Stage: state.StageOutput, Turn: 1, Tripped: true, Info: raw(`"secret"`)}
	if diff := cmp.Diff(want, te.Result); diff != "" {
		t.Errorf("Result (-want +got):\n%s", diff)
	}
	if te.Guardrail != "no_secrets" || te.Stage != state.StageOutput || te.Turn != 1 || te.Info != "secret" {
		t.Errorf("error = %+v", te)
	}
	if got, want := te.Error(), `guardrails: output guardrail "no_secrets" tripped on turn 1`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if diff := cmp.Diff([]state.GuardrailResult{want}, te.State.GuardrailResults()); diff != "" {
		t.Errorf("State results (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"user_message", "assistant_message"}, kinds(te.State)); diff != "" {
		t.Errorf("State items (-want +got):\n%s", diff)
	}
	if _, done := got.state.FinalOutput(); done {
		t.Error("the run finished despite the tripwire")
	}
	for _, target := range []error{guardrails.ErrTripwire, pipeline.ErrOutputRejected} {
		checkErr(t, got.err, target)
	}
	if errors.Is(got.err, pipeline.ErrInputRejected) || errors.Is(got.err, pipeline.ErrGuardrailFailed) {
		t.Errorf("output tripwire %v matches another verdict", got.err)
	}
	var verdict interface{ GuardrailResult() state.GuardrailResult }
	if !errors.As(got.err, &verdict) || verdict.GuardrailResult().Name != "no_secrets" {
		t.Errorf("errors.As(err, interface{GuardrailResult()}) failed for %v", got.err)
	}
}

// TestVerdictSentinels checks the core sentinels each error matches, so
// middleware outside the guardrails can act without importing them.
func TestVerdictSentinels(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		give    error
		want    []error
		wantNot []error
	}{
		{
			name:    "input tripwire",
			give:    &guardrails.TripwireError{Stage: state.StageInput},
			want:    []error{guardrails.ErrTripwire, pipeline.ErrInputRejected},
			wantNot: []error{pipeline.ErrOutputRejected, pipeline.ErrGuardrailFailed, guardrails.ErrCheck},
		},
		{
			name:    "output tripwire",
			give:    &guardrails.TripwireError{Stage: state.StageOutput},
			want:    []error{guardrails.ErrTripwire, pipeline.ErrOutputRejected},
			wantNot: []error{pipeline.ErrInputRejected, pipeline.ErrGuardrailFailed},
		},
		{
			name:    "tool tripwire",
			give:    &guardrails.TripwireError{Stage: state.StageToolOutput},
			want:    []error{guardrails.ErrTripwire},
			wantNot: []error{pipeline.ErrInputRejected, pipeline.ErrOutputRejected, pipeline.ErrGuardrailFailed},
		},
		{
			name:    "check error",
			give:    &guardrails.CheckError{Stage: state.StageOutput, Err: errBroken},
			want:    []error{guardrails.ErrCheck, pipeline.ErrGuardrailFailed, errBroken},
			wantNot: []error{guardrails.ErrTripwire, pipeline.ErrOutputRejected},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, w := range tt.want {
				if !errors.Is(tt.give, w) {
					t.Errorf("errors.Is(%v, %v) = false", tt.give, w)
				}
			}
			for _, w := range tt.wantNot {
				if errors.Is(tt.give, w) {
					t.Errorf("errors.Is(%v, %v) = true", tt.give, w)
				}
			}
		})
	}
}

// TestCheckErrorSaysWhere checks that a failed check names itself, its
// stage, turn and call.
func TestCheckErrorSaysWhere(t *testing.T) {
	t.Parallel()
	fail := func(ctx context.Context, _ *pipeline.Agent, _ *pipeline.ToolCall) (guardrails.Verdict, error) {
		return guardrails.Verdict{}, errBroken
	}
	var tools counter
	agent := &pipeline.Agent{Name: "agent", Model: scripted.New(scripted.CallTool("echo", "{}")), Tools: []pipeline.Tool{tools.tool("echo")}}
	r := pipeline.NewRunner(pipeline.WithMiddleware(guardrails.ToolInput(fail, guardrails.WithName("pii"))))
	got := runOnce(t, r, agent, false, "hi")
	want := `guardrails: tool_input guardrail "pii" on turn 1 (call call_run_test_1_1): classifier unavailable`
	if got.err == nil || got.err.Error() != want {
		t.Fatalf("err = %v, want %s", got.err, want)
	}
	checkErr(t, got.err, errBroken)
}

// TestBadVerdicts checks that a verdict a stage cannot act on is a check
// error, not a silent pass.
func TestBadVerdicts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		mw   pipeline.Middleware
	}{
		{name: "output rejects", mw: guardrails.Output(func(ctx context.Context, _ *pipeline.Agent, _ string) (guardrails.Verdict, error) {
			return guardrails.RejectCall("no", nil), nil
		})},
		{name: "input replaces", mw: guardrails.Input(func(ctx context.Context, _ *pipeline.Agent, _ []state.Item) (guardrails.Verdict, error) {
			return guardrails.ReplaceOutput("no", nil), nil
		})},
		{name: "tool input replaces", mw: guardrails.ToolInput(func(ctx context.Context, _ *pipeline.Agent, _ *pipeline.ToolCall) (guardrails.Verdict, error) {
			return guardrails.ReplaceOutput("no", nil), nil
		})},
		{name: "tool output rejects", mw: guardrails.ToolOutput(func(ctx context.Context, _ *pipeline.Agent, _ pipeline.ToolOutcome) (guardrails.Verdict, error) {
			return guardrails.RejectCall("no", nil), nil
		})},
		{name: "unknown behavior", mw: guardrails.ToolOutput(func(ctx context.Context, _ *pipeline.Agent, _ pipeline.ToolOutcome) (guardrails.Verdict, error) {
			return guardrails.Verdict{Behavior: 9}, nil
		})},
		{name: "info does not marshal", mw: guardrails.Output(func(ctx context.Context, _ *pipeline.Agent, _ string) (guardrails.Verdict, error) {
			return guardrails.Pass(func() {}), nil
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var tools counter
			agent := &pipeline.Agent{
				Name: "agent", Model: scripted.New(scripted.CallTool("echo", "{}"), scripted.Reply("done")),
				Tools: []pipeline.Tool{tools.tool("echo")},
			}
			got := runOnce(t, pipeline.NewRunner(pipeline.WithMiddleware(tt.mw)), agent, false, "hi")
			checkErr(t, got.err, guardrails.ErrCheck)
			if n := len(got.state.GuardrailResults()); n != 0 {
				t.Errorf("%d results recorded for a failed check", n)
			}
		})
	}
}

// TestWiringPanics checks that wiring mistakes panic at construction.
func TestWiringPanics(t *testing.T) {
	t.Parallel()
	out := func(ctx context.Context, _ *pipeline.Agent, _ string) (guardrails.Verdict, error) {
		return guardrails.Verdict{}, nil
	}
	in := func(ctx context.Context, _ *pipeline.Agent, _ []state.Item) (guardrails.Verdict, error) {
		return guardrails.Verdict{}, nil
	}
	tests := []struct {
		name  string
		build func()
		want  string
	}{
		{name: "nil check", build: func() { guardrails.Output(nil) }, want: "guardrails: Output called with a nil Check"},
		{name: "parallel output", build: func() { guardrails.Output(out, guardrails.WithParallel()) }, want: "only Input runs in parallel"},
		{name: "before approval output", build: func() { guardrails.Output(out, guardrails.BeforeApproval()) }, want: "only ToolInput runs before approval"},
		{name: "wrong kind", build: func() { guardrails.Output(out, guardrails.WithCheck("x", in)) }, want: `given WithCheck("x")`},
		{name: "repeated name", build: func() { guardrails.Output(out, guardrails.WithCheck("output", out)) }, want: `repeated name "output"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				v := recover()
				s, _ := v.(string)
				if !strings.Contains(s, tt.want) {
					t.Errorf("panic = %v, want one containing %q", v, tt.want)
				}
			}()
			tt.build()
		})
	}
}
