package guardrails_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/guardrails"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/pipeline/pipelinetest"
	"github.com/turnkit/turnkit/state"
)

// timeline records the order of events across goroutines.
type timeline struct {
	mu     sync.Mutex
	events []string
}

func (l *timeline) add(ev string) {
	l.mu.Lock()
	l.events = append(l.events, ev)
	l.mu.Unlock()
}

func (l *timeline) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...)
}

// watched wraps a scripted model: it closes started when the first call
// begins and done when it returned, and keeps that call's error.
type watched struct {
	m       *scripted.Model
	log     *timeline
	once    sync.Once
	started chan struct{}
	done    chan struct{}
	err     error
}

func watch(m *scripted.Model, log *timeline) *watched {
	return &watched{m: m, log: log, started: make(chan struct{}), done: make(chan struct{})}
}

func (w *watched) Respond(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
	first := false
	w.once.Do(func() { first = true })
	if !first {
		return w.m.Respond(ctx, c)
	}
	close(w.started)
	resp, err := w.m.Respond(ctx, c)
	w.err = err
	w.log.add("model returned")
	close(w.done)
	return resp, err
}

// TestParallelInput checks an input guardrail running beside the model
// call: its tripwire cancels the call and discards its output, its error
// does too, and when it passes no tool runs before it did.
func TestParallelInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// model is the first model step; the check waits for waitFor
		// ("started" or "done") of that call, then answers.
		model     scripted.Step
		waitFor   string
		give      answer
		wantErr   error
		wantModel error // what the first model call returned
		wantKinds []string
		wantLog   []string
		wantFinal string
	}{
		{
			name: "tripwire cancels the model call", model: scripted.Block(), waitFor: "started",
			give: answer{v: guardrails.Trip("jailbreak")}, wantErr: guardrails.ErrTripwire, wantModel: context.Canceled,
			wantKinds: []string{"user_message"}, wantLog: []string{"check answered", "model returned"},
		},
		{
			name: "error cancels the model call", model: scripted.Block(), waitFor: "started",
			give: answer{err: errBroken}, wantErr: guardrails.ErrCheck, wantModel: context.Canceled,
			wantKinds: []string{"user_message"}, wantLog: []string{"check answered", "model returned"},
		},
		{
			name: "tripwire after the model answered discards its output", model: scripted.CallTool("echo", "{}"), waitFor: "done",
			give: answer{v: guardrails.Trip("jailbreak")}, wantErr: guardrails.ErrTripwire,
			wantKinds: []string{"user_message"}, wantLog: []string{"model returned", "check answered"},
		},
		{
			name: "no tool runs before the check passed", model: scripted.CallTool("echo", "{}"), waitFor: "done",
			give:      answer{v: guardrails.Pass(nil)},
			wantKinds: []string{"user_message", "tool_call", "tool_output", "assistant_message"},
			wantLog:   []string{"model returned", "check answered", "tool ran"}, wantFinal: "done",
		},
	}
	for _, tt := range tests {
		for _, m := range modes {
			t.Run(tt.name+"/"+m.name, func(t *testing.T) {
				t.Parallel()
				log := &timeline{}
				model := watch(scripted.New(tt.model, scripted.Reply("done")), log)
				wait := map[string]chan struct{}{"started": model.started, "done": model.done}[tt.waitFor]
				check := func(ctx context.Context, _ *pipeline.Agent, _ []state.Item) (guardrails.Verdict, error) {
					<-wait
					log.add("check answered")
					return tt.give.v, tt.give.err
				}
				echo := pipeline.NewTool(pipeline.ToolSpec{Name: "echo"}, func(ctx context.Context, _ json.RawMessage) (string, error) {
					log.add("tool ran")
					return "ok", nil
				})
				agent := &pipeline.Agent{Name: "agent", Model: model, Tools: []pipeline.Tool{echo}}
				r := pipeline.NewRunner(pipeline.WithMiddleware(guardrails.Input(check, guardrails.WithParallel())))
				got := runOnce(t, r, agent, m.stream, "hello")
				checkErr(t, got.err, tt.wantErr)
				<-model.done
				checkErr(t, model.err, tt.wantModel)
				if diff := cmp.Diff(tt.wantKinds, kinds(got.state)); diff != "" {
					t.Errorf("items (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tt.wantLog, log.get()); diff != "" {
					t.Errorf("order (-want +got):\n%s", diff)
				}
				if got.final != tt.wantFinal {
					t.Errorf("final = %q, want %q", got.final, tt.wantFinal)
				}
			})
		}
	}
}

// TestInputRunsOnce checks that an input guardrail runs on the first turn
// only: not on later turns, not when the run resumes after a pause.
func TestInputRunsOnce(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name string
		opts []guardrails.Option
	}{
		{"blocking", []guardrails.Option{guardrails.WithName("in")}},
		{"parallel", []guardrails.Option{guardrails.WithName("in"), guardrails.WithParallel()}},
	} {
		for _, m := range modes {
			t.Run(mode.name+"/"+m.name, func(t *testing.T) {
				t.Parallel()
				var calls counter
				check := func(ctx context.Context, _ *pipeline.Agent, in []state.Item) (guardrails.Verdict, error) {
					calls.n.Add(1)
					return guardrails.Verdict{}, nil
				}
				var tools counter
				agent := &pipeline.Agent{
					Name: "agent",
					Model: scripted.New(scripted.CallTool("echo", "{}"), scripted.CallTool("danger", "{}"),
						scripted.Reply("done")),
					Tools: []pipeline.Tool{tools.tool("echo"), tools.tool("danger")},
				}
				r := pipeline.NewRunner(pipeline.WithMiddleware(approval.Require(approval.ByTool("danger")), guardrails.Input(check, mode.opts...)))
				got := runOnce(t, r, agent, m.stream, "hello")
				if got.err != nil || got.state.Pending() == nil {
					t.Fatalf("run = %v, pending %v; want a pause", got.err, got.state.Pending())
				}
				if err := got.state.Approve("call_run_test_2_1"); err != nil {
					t.Fatal(err)
				}
				if res := resumeOnce(t, r, agent, m.stream, got.state); res.err != nil || res.final != "done" {
					t.Fatalf("resume = %q, %v", res.final, res.err)
				}
				want := []state.GuardrailResult{{Name: "in", Stage: state.StageInput, Turn: 1}}
				if diff := cmp.Diff(want, got.state.GuardrailResults()); diff != "" {
					t.Errorf("results (-want +got):\n%s", diff)
				}
				if n := calls.n.Load(); n != 1 {
					t.Errorf("input check ran %d times, want 1", n)
				}
			})
		}
	}
}

// TestTrippedRunStaysStopped checks that resuming a run a guardrail stopped
// returns the same tripwire without running a turn or the check.
func TestTrippedRunStaysStopped(t *testing.T) {
	t.Parallel()
	var calls counter
	check := func(ctx context.Context, _ *pipeline.Agent, _ []state.Item) (guardrails.Verdict, error) {
		calls.n.Add(1)
		return guardrails.Trip("no"), nil
	}
	model := scripted.New(scripted.Reply("never"))
	agent := &pipeline.Agent{Name: "agent", Model: model}
	r := pipeline.NewRunner(pipeline.WithMiddleware(guardrails.Input(check, guardrails.WithName("in"))))
	got := runOnce(t, r, agent, false, "hello")
	checkErr(t, got.err, pipeline.ErrInputRejected)
	st := pipelinetest.RoundTrip(t, got.state)
	for _, m := range modes {
		res := resumeOnce(t, r, agent, m.stream, st)
		te, ok := errors.AsType[*guardrails.TripwireError](res.err)
		if !ok || te.Guardrail != "in" || te.Turn != 1 {
			t.Fatalf("%s resume: err = %v, want the input tripwire again", m.name, res.err)
		}
	}
	if n, calls := calls.n.Load(), len(model.Calls()); n != 1 || calls != 0 {
		t.Errorf("check ran %d times and the model %d; want 1 and 0", n, calls)
	}
}
