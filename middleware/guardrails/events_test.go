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

// TestStreamReportsVerdicts: a streamed run yields each verdict as it is
// recorded, the tripping one before the error that ends the run, and the
// events say what the state holds.
func TestStreamReportsVerdicts(t *testing.T) {
	t.Parallel()
	allow := func(context.Context, *pipeline.Agent, []state.Item) (guardrails.Verdict, error) {
		return guardrails.Pass(nil), nil
	}
	block := func(context.Context, *pipeline.Agent, string) (guardrails.Verdict, error) {
		return guardrails.Trip("secret"), nil
	}
	r := pipeline.NewRunner(pipeline.WithMiddleware(
		guardrails.Input(allow, guardrails.WithName("polite")),
		guardrails.Output(block, guardrails.WithName("no_secrets")),
	))
	a := &pipeline.Agent{Name: "a", Model: scripted.New(scripted.Reply("the key is sk-1"))}
	st := state.NewRun("run_events", a.Name)

	var (
		got      []state.GuardrailResult
		final    error
		afterErr bool
	)
	for ev, err := range r.Stream(context.Background(), a, pipeline.UserInput("hi"), pipeline.WithState(st)) {
		if final != nil {
			afterErr = true
		}
		if g, ok := ev.(pipeline.GuardrailChecked); ok {
			got = append(got, g.Result)
		}
		if err != nil {
			final = err
		}
	}
	if !errors.Is(final, guardrails.ErrTripwire) {
		t.Fatalf("stream ended with %v, want a tripwire", final)
	}
	if afterErr {
		t.Error("the stream yielded after its error")
	}
	want := []string{"polite/input/false", "no_secrets/output/true"}
	var names []string
	for _, g := range got {
		names = append(names, g.Name+"/"+g.Stage.String()+"/"+map[bool]string{true: "true", false: "false"}[g.Tripped])
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("GuardrailChecked events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(st.GuardrailResults(), got); diff != "" {
		t.Errorf("events and state disagree (-state +events):\n%s", diff)
	}
}
