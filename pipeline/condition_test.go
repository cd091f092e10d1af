package pipeline_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool"
)

type tierKey struct{}

// countingTool counts its runs.
func countingTool(name string, runs *atomic.Int32, opts ...tool.Option) pipeline.Tool {
	return tool.Func(name, "Counts.", func(context.Context, struct{}) (string, error) {
		runs.Add(1)
		return "ran " + name, nil
	}, opts...)
}

func outputsOf(res *pipeline.Result) []string {
	var out []string
	for _, it := range res.NewItems() {
		if it.Kind() == state.KindToolOutput {
			out = append(out, it.Text())
		}
	}
	return out
}

// A tool enabled per turn is offered on the turns its condition allows;
// one enabled per run (from a value of the run's context) on none of the
// run's turns when it says no; a call to a disabled tool is answered with
// a typed error and the tool does not run.
func TestConditionalTools(t *testing.T) {
	t.Parallel()
	var firstRuns, premiumRuns, plainRuns atomic.Int32
	firstTurn := countingTool("first_turn_only", &firstRuns, tool.WithEnabled(func(_ context.Context, t *pipeline.Turn) bool { return t.Number == 1 }))
	premium := countingTool("premium", &premiumRuns, tool.WithEnabled(func(ctx context.Context, _ *pipeline.Turn) bool {
		tier, _ := ctx.Value(tierKey{}).(string)
		return tier == "premium"
	}))
	plain := countingTool("plain", &plainRuns)
	m := scripted.New(
		scripted.Respond(scripted.Call("first_turn_only", `{}`), scripted.Call("plain", `{}`)),
		scripted.Respond(scripted.Call("first_turn_only", `{}`), scripted.Call("premium", `{}`)),
		scripted.Reply("done"),
	)
	agent := &pipeline.Agent{Name: "a", Model: m, Tools: []pipeline.Tool{firstTurn, premium, plain}}
	ctx := context.WithValue(context.Background(), tierKey{}, "basic")
	res, err := pipeline.NewRunner().Run(ctx, agent, pipeline.UserInput("go"))
	if err != nil || res.FinalOutput() != "done" {
		t.Fatalf("run = %q, %v", res.FinalOutput(), err)
	}
	var offered [][]string
	for _, c := range m.Calls() {
		offered = append(offered, c.Tools)
	}
	want := [][]string{{"first_turn_only", "plain"}, {"plain"}, {"plain"}}
	if diff := cmp.Diff(want, offered); diff != "" {
		t.Errorf("tools offered per turn (-want +got):\n%s", diff)
	}
	if firstRuns.Load() != 1 || premiumRuns.Load() != 0 || plainRuns.Load() != 1 {
		t.Errorf("runs: first_turn_only %d, premium %d, plain %d; want 1, 0, 1", firstRuns.Load(), premiumRuns.Load(), plainRuns.Load())
	}
	outs := outputsOf(res)
	if len(outs) != 4 || outs[0] != "ran first_turn_only" || outs[1] != "ran plain" {
		t.Fatalf("outputs = %q", outs)
	}
	for i, name := range []string{"first_turn_only", "premium"} {
		if out := outs[2+i]; !strings.Contains(out, `tool "`+name+`" disabled on this turn`) {
			t.Errorf("output of the call to disabled %s = %q", name, out)
		}
	}

	// The same agent in a premium run offers the premium tool.
	m2 := scripted.New(scripted.CallTool("premium", `{}`), scripted.Reply("done"))
	agent2 := &pipeline.Agent{Name: "a", Model: m2, Tools: []pipeline.Tool{firstTurn, premium, plain}}
	ctx = context.WithValue(context.Background(), tierKey{}, "premium")
	if _, err := pipeline.NewRunner().Run(ctx, agent2, pipeline.UserInput("go")); err != nil {
		t.Fatal(err)
	}
	if got := m2.Calls()[0].Tools; !cmp.Equal(got, []string{"first_turn_only", "premium", "plain"}) {
		t.Errorf("premium run offered %v", got)
	}
	if premiumRuns.Load() != 1 {
		t.Errorf("premium ran %d times, want 1", premiumRuns.Load())
	}
}

// The typed error reaches the tool stage's observers and the turn says
// which tools it disabled.
func TestDisabledCallIsTyped(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	off := countingTool("off", &runs, tool.WithEnabled(func(context.Context, *pipeline.Turn) bool { return false }))
	var (
		enabled []bool
		errs    []error
	)
	seen := pipeline.Middleware{Name: "seen", Turn: func(next pipeline.Handler) pipeline.Handler {
		return pipeline.HandlerFunc(func(ctx context.Context, t *pipeline.Turn) error {
			err := next.ServeTurn(ctx, t)
			enabled = append(enabled, t.ToolEnabled("off"))
			for _, res := range t.Results {
				errs = append(errs, res.Err)
			}
			return err
		})
	}}
	m := scripted.New(scripted.CallTool("off", `{}`), scripted.Reply("done"))
	agent := &pipeline.Agent{Name: "a", Model: m, Tools: []pipeline.Tool{off}}
	res, err := pipeline.NewRunner(pipeline.WithMiddleware(seen)).Run(context.Background(), agent, pipeline.UserInput("go"))
	if err != nil || res.FinalOutput() != "done" {
		t.Fatalf("run = %q, %v", res.FinalOutput(), err)
	}
	if runs.Load() != 0 || !cmp.Equal(enabled, []bool{false, false}) {
		t.Errorf("runs %d, enabled per turn %v", runs.Load(), enabled)
	}
	de, ok := errors.AsType[*pipeline.ToolDisabledError](errors.Join(errs...))
	if len(errs) != 1 || !ok || de.Tool != "off" || de.Agent != "a" || de.CallID == "" {
		t.Errorf("result errors %v, want one *ToolDisabledError of off", errs)
	}
}

// A disabled handoff is not offered and a call to it hands nothing off.
func TestConditionalHandoff(t *testing.T) {
	t.Parallel()
	expert := &pipeline.Agent{Name: "expert", Model: scripted.New(scripted.Reply("expert answer"))}
	allow := false
	m := scripted.New(scripted.CallTool("transfer_to_expert", `{}`), scripted.Reply("triage answer"))
	triage := &pipeline.Agent{Name: "triage", Model: m, Handoffs: []pipeline.Handoff{{
		Agent:   expert,
		Enabled: func(context.Context, *pipeline.Turn) bool { return allow },
	}}}
	res, err := pipeline.NewRunner().Run(context.Background(), triage, pipeline.UserInput("go"))
	if err != nil || res.FinalOutput() != "triage answer" || res.LastAgent().Name != "triage" {
		t.Fatalf("run = %q by %s, %v; want triage's answer", res.FinalOutput(), res.LastAgent().Name, err)
	}
	if got := m.Calls()[0].Tools; len(got) != 0 {
		t.Errorf("offered %v, want no tools", got)
	}
	if outs := outputsOf(res); len(outs) != 1 || !strings.Contains(outs[0], "disabled on this turn") {
		t.Errorf("outputs = %q", outs)
	}

	allow = true
	m2 := scripted.New(scripted.CallTool("transfer_to_expert", `{}`))
	triage.Model = m2
	res, err = pipeline.NewRunner().Run(context.Background(), triage, pipeline.UserInput("go"))
	if err != nil || res.FinalOutput() != "expert answer" {
		t.Fatalf("enabled handoff: run = %q, %v", res.FinalOutput(), err)
	}
}
