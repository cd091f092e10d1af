package guardrails_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/middleware/guardrails"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/pipeline/pipelinetest"
	"github.com/turnkit/turnkit/state"
)

func tripOnSecret(ctx context.Context, _ *pipeline.Agent, in []state.Item) (guardrails.Verdict, error) {
	for _, it := range in {
		if strings.Contains(it.Text(), "secret") {
			return guardrails.Trip("secret"), nil
		}
	}
	return guardrails.Pass(nil), nil
}

// TestBlockedInputNeverPlaced: with DropBlockedInput or RedactBlockedInput
// a blocked input never enters the run: the state holds nothing of it (or
// its redacted form), the model is not called, the verdict is recorded
// once and streamed, and the run ends with the tripwire in both modes.
func TestBlockedInputNeverPlaced(t *testing.T) {
	t.Parallel()
	redact := func(ctx context.Context, in []state.Item) ([]state.Item, error) {
		return []state.Item{state.UserMessage(strings.ReplaceAll(in[0].Text(), "secret", "[x]"))}, nil
	}
	for _, tc := range []struct {
		name string
		opt  guardrails.Option
		want string // the input the state holds
	}{
		{"drop", guardrails.DropBlockedInput(), ""},
		{"redact", guardrails.RedactBlockedInput(redact), "the [x] is 42"},
	} {
		for _, mode := range modes {
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				t.Parallel()
				m := scripted.New(scripted.Reply("no"))
				a := &pipeline.Agent{Name: "a", Model: m}
				r := pipeline.NewRunner(pipeline.WithMiddleware(guardrails.Input(tripOnSecret, tc.opt)))
				st := state.NewRun("run_blocked", "a")
				var err error
				var events []pipeline.Event
				if mode.stream {
					_, events, err = pipelinetest.Drain(r.Stream(context.Background(), a, pipeline.UserInput("the secret is 42"), pipeline.WithState(st)))
				} else {
					_, err = r.Run(context.Background(), a, pipeline.UserInput("the secret is 42"), pipeline.WithState(st))
				}
				tw, ok := errors.AsType[*guardrails.TripwireError](err)
				if !ok || tw.Stage != state.StageInput {
					t.Fatalf("err = %v, want an input tripwire", err)
				}
				var got []string
				for _, it := range st.Input() {
					got = append(got, it.Text())
				}
				if strings.Join(got, "|") != tc.want {
					t.Errorf("state input %q, want %q", got, tc.want)
				}
				if in := tw.State.Input(); len(in) != len(st.Input()) {
					t.Errorf("the tripwire's state has %d input items, the run %d", len(in), len(st.Input()))
				}
				if n := len(m.Calls()); n != 0 {
					t.Errorf("model called %d times", n)
				}
				if rs := st.GuardrailResults(); len(rs) != 1 || !rs[0].Tripped {
					t.Errorf("results %+v, want one tripped", rs)
				}
				checked := 0
				for _, ev := range events {
					if _, ok := ev.(pipeline.GuardrailChecked); ok {
						checked++
					}
				}
				if mode.stream && checked != 1 {
					t.Errorf("streamed %d GuardrailChecked events, want 1", checked)
				}
			})
		}
	}
}

// TestBlockedInputRedactFails: a redaction that fails keeps nothing of the
// input, and its error comes with the tripwire.
func TestBlockedInputRedactFails(t *testing.T) {
	t.Parallel()
	boom := errors.New("redactor down")
	r := pipeline.NewRunner(pipeline.WithMiddleware(guardrails.Input(tripOnSecret,
		guardrails.RedactBlockedInput(func(context.Context, []state.Item) ([]state.Item, error) { return nil, boom }))))
	st := state.NewRun("run_redact", "a")
	_, err := r.Run(context.Background(), &pipeline.Agent{Name: "a", Model: scripted.New(scripted.Reply("no"))},
		pipeline.UserInput("secret"), pipeline.WithState(st))
	if !errors.Is(err, guardrails.ErrTripwire) || !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the tripwire and the redaction's error", err)
	}
	if n := len(st.Input()); n != 0 {
		t.Errorf("state holds %d input items, want none", n)
	}
}

// TestBlockedInputPasses: an input the checks pass is placed as given,
// checked once.
func TestBlockedInputPasses(t *testing.T) {
	t.Parallel()
	st := state.NewRun("run_pass", "a")
	res, err := pipeline.NewRunner(pipeline.WithMiddleware(guardrails.Input(tripOnSecret, guardrails.DropBlockedInput()))).
		Run(context.Background(), &pipeline.Agent{Name: "a", Model: scripted.New(scripted.Reply("hi"))}, pipeline.UserInput("hello"), pipeline.WithState(st))
	if err != nil || res.FinalOutput() != "hi" {
		t.Fatalf("run: %v, %q", err, res.FinalOutput())
	}
	if rs := st.GuardrailResults(); len(rs) != 1 || rs[0].Tripped {
		t.Errorf("results %+v, want one pass", rs)
	}
	if in := st.Input(); len(in) != 1 || in[0].Text() != "hello" {
		t.Errorf("input %v", in)
	}
}

// TestBlockedInputOptionsOnlyForInput: the options panic on other kinds.
func TestBlockedInputOptionsOnlyForInput(t *testing.T) {
	t.Parallel()
	for _, opt := range []guardrails.Option{guardrails.DropBlockedInput(), guardrails.WithHistory()} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("Output accepted an input-only option")
				}
			}()
			guardrails.Output(func(context.Context, *pipeline.Agent, string) (guardrails.Verdict, error) {
				return guardrails.Verdict{}, nil
			}, opt)
		}()
	}
}
