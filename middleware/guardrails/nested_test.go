package guardrails_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/middleware/guardrails"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/pipeline/pipelinetest"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/memstore"
)

// noCard trips on a card number in the run's input.
func noCard(_ context.Context, _ *pipeline.Agent, in []state.Item) (guardrails.Verdict, error) {
	for _, it := range in {
		if strings.Contains(it.Text(), "4111") {
			return guardrails.Trip("card number"), nil
		}
	}
	return guardrails.Verdict{}, nil
}

// noSecret trips on "SECRET" in a final output.
func noSecret(_ context.Context, _ *pipeline.Agent, out string) (guardrails.Verdict, error) {
	if strings.Contains(out, "SECRET") {
		return guardrails.Trip("secret"), nil
	}
	return guardrails.Verdict{}, nil
}

// nestedGuard is an outer agent "boss" whose tool is the agent
// "researcher"; both are served by one runner whose guardrails trip on a
// card number in a run's input and on "SECRET" in a final output. The
// researcher is asked ask and answers answer.
type nestedGuard struct {
	boss, researcher *pipeline.Agent
	inner            *scripted.Model
	runner           *pipeline.Runner
}

func newNestedGuard(ask, answer string, abort bool, extra ...scripted.Step) nestedGuard {
	inner := scripted.New(scripted.Reply(answer))
	researcher := &pipeline.Agent{Name: "researcher", Model: inner}
	steps := append([]scripted.Step{scripted.CallTool("researcher", `{"input":"`+ask+`"}`)}, extra...)
	steps = append(steps, scripted.Reply("boss done"))
	tools := &counter{}
	boss := &pipeline.Agent{
		Name:  "boss",
		Model: scripted.New(steps...),
		Tools: []pipeline.Tool{pipeline.AgentTool(researcher), tools.tool("danger")},
	}
	opts := []pipeline.Option{pipeline.WithMiddleware(
		approval.Require(approval.ByTool("danger")),
		guardrails.Input(noCard, guardrails.WithName("no_card")),
		guardrails.Output(noSecret, guardrails.WithName("no_secret")),
	)}
	if abort {
		opts = append(opts, pipeline.WithToolErrorsAbort())
	}
	return nestedGuard{boss: boss, researcher: researcher, inner: inner, runner: pipeline.NewRunner(opts...)}
}

// nestedResults returns the results of st recorded for a nested run, and
// checks that the outer run's own results are told apart from them.
func nestedResults(t *testing.T, st *state.Run) []state.GuardrailResult {
	t.Helper()
	var nested []state.GuardrailResult
	for _, g := range st.GuardrailResults() {
		if g.Owner != "" {
			nested = append(nested, g)
		}
	}
	return nested
}

// wantNestedTrip checks that st records the nested run's tripped result
// once, tagged with its owner call and agent, and nothing else of the
// nested run (a tripped input guardrail leaves no output check to record).
func wantNestedTrip(t *testing.T, where string, st *state.Run, name string, stage state.GuardrailStage) {
	t.Helper()
	if st == nil {
		t.Fatalf("%s: no state", where)
	}
	var tripped []state.GuardrailResult
	for _, g := range nestedResults(t, st) {
		if g.Agent != "researcher" || !strings.HasPrefix(g.Owner, "call_") || strings.Contains(g.Owner, "/") {
			t.Errorf("%s: nested result %+v: want Agent researcher and Owner the outer call ID", where, g)
		}
		if g.Tripped {
			tripped = append(tripped, g)
		}
	}
	if len(tripped) != 1 || tripped[0].Name != name || tripped[0].Stage != stage {
		t.Fatalf("%s: nested tripped results %+v, want one %s %s", where, tripped, stage, name)
	}
}

// TestNestedTripwireReachesOuterRun is issue 34 point 4: a nested run's
// guardrail results are recorded in the outer run, tagged with the call
// that ran it and the nested agent, in the live state, after a JSON round
// trip, and (when the failure aborts the outer run) in StateOf(err), each
// once.
func TestNestedTripwireReachesOuterRun(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, ask, answer string
		guard             string
		stage             state.GuardrailStage
	}{
		{name: "output", ask: "look", answer: "the SECRET plan", guard: "no_secret", stage: state.StageOutput},
		{name: "input", ask: "card 4111 1111", answer: "never said", guard: "no_card", stage: state.StageInput},
	}
	for _, tc := range cases {
		for _, m := range modes {
			t.Run(tc.name+"/"+m.name+"/default", func(t *testing.T) {
				t.Parallel()
				sc := newNestedGuard(tc.ask, tc.answer, false)
				got := runOnce(t, sc.runner, sc.boss, m.stream, "hi")
				if got.err != nil || got.final != "boss done" {
					t.Fatalf("run = %q, %v; want the nested failure reported to the model", got.final, got.err)
				}
				wantNestedTrip(t, "live", got.state, tc.guard, tc.stage)
				wantNestedTrip(t, "round trip", pipelinetest.RoundTrip(t, got.state), tc.guard, tc.stage)
				for _, g := range got.state.GuardrailResults() {
					if g.Owner == "" && g.Tripped {
						t.Errorf("the outer run records a tripwire of its own: %+v", g)
					}
				}
			})
			t.Run(tc.name+"/"+m.name+"/abort", func(t *testing.T) {
				t.Parallel()
				sc := newNestedGuard(tc.ask, tc.answer, true)
				got := runOnce(t, sc.runner, sc.boss, m.stream, "hi")
				if !errors.Is(got.err, guardrails.ErrTripwire) {
					t.Fatalf("run error %v, want a tripwire", got.err)
				}
				wantNestedTrip(t, "live", got.state, tc.guard, tc.stage)
				st, ok := pipeline.StateOf(got.err)
				if !ok {
					t.Fatal("StateOf(err): no state")
				}
				wantNestedTrip(t, "StateOf(err)", st, tc.guard, tc.stage)
				rt := pipelinetest.RoundTrip(t, got.state)
				wantNestedTrip(t, "round trip", rt, tc.guard, tc.stage)
				calls := len(sc.inner.Calls())

				// A run stopped by a tripwire stays stopped: resuming it
				// fails with the same typed error, runs no model and
				// records nothing more.
				again := resumeOnce(t, sc.runner, sc.boss, m.stream, rt)
				if !errors.Is(again.err, guardrails.ErrTripwire) {
					t.Fatalf("resume error %v, want the tripwire again", again.err)
				}
				if n := len(sc.inner.Calls()); n != calls {
					t.Errorf("the resume called the nested model again: %d calls, had %d", n, calls)
				}
				wantNestedTrip(t, "after the refused resume", rt, tc.guard, tc.stage)
			})
		}
	}
}

// TestNestedTripwireDoesNotBlockResume: a nested tripwire reported to the
// model (the default) does not stop the outer run, so a later pause of the
// outer run resumes as the docs allow, and the nested results stay once.
func TestNestedTripwireDoesNotBlockResume(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			sc := newNestedGuard("look", "the SECRET plan", false, scripted.CallTool("danger", `{}`))
			first := runOnce(t, sc.runner, sc.boss, m.stream, "hi")
			if first.err != nil {
				t.Fatal(first.err)
			}
			p := first.state.Pending()
			if len(p) != 1 || p[0].Tool != "danger" {
				t.Fatalf("pending %+v, want the danger call", p)
			}
			if err := first.state.Approve(p[0].CallID); err != nil {
				t.Fatal(err)
			}
			st := pipelinetest.RoundTrip(t, first.state)
			got := resumeOnce(t, sc.runner, sc.boss, m.stream, st)
			if got.err != nil || got.final != "boss done" {
				t.Fatalf("resume = %q, %v; want it to finish", got.final, got.err)
			}
			wantNestedTrip(t, "after resume", st, "no_secret", state.StageOutput)
		})
	}
}

// TestNestedResultsOnceAcrossPause: a nested run that pauses for approval
// hands its results to the outer run when it pauses and the later ones
// when it finishes, each once, across a JSON round trip.
func TestNestedResultsOnceAcrossPause(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			tools := &counter{}
			researcher := &pipeline.Agent{
				Name:  "researcher",
				Model: scripted.New(scripted.CallTool("danger", `{}`), scripted.Reply("found it")),
				Tools: []pipeline.Tool{tools.tool("danger")},
			}
			boss := &pipeline.Agent{
				Name:  "boss",
				Model: scripted.New(scripted.CallTool("researcher", `{"input":"look"}`), scripted.Reply("boss done")),
				Tools: []pipeline.Tool{pipeline.AgentTool(researcher)},
			}
			r := pipeline.NewRunner(pipeline.WithMiddleware(
				approval.Require(approval.ByTool("danger")),
				guardrails.Input(noCard, guardrails.WithName("no_card")),
				guardrails.Output(noSecret, guardrails.WithName("no_secret")),
			))
			first := runOnce(t, r, boss, m.stream, "hi")
			if first.err != nil {
				t.Fatal(first.err)
			}
			if got := nestedResults(t, first.state); len(got) != 1 || got[0].Name != "no_card" {
				t.Fatalf("nested results at the pause %+v, want the nested input check", got)
			}
			p := first.state.Pending()
			if len(p) != 1 {
				t.Fatalf("pending %+v", p)
			}
			if err := first.state.Approve(p[0].CallID); err != nil {
				t.Fatal(err)
			}
			st := pipelinetest.RoundTrip(t, first.state)
			if got := resumeOnce(t, r, boss, m.stream, st); got.err != nil || got.final != "boss done" {
				t.Fatalf("resume = %q, %v", got.final, got.err)
			}
			var names []string
			for _, g := range nestedResults(t, pipelinetest.RoundTrip(t, st)) {
				names = append(names, g.Name)
			}
			if strings.Join(names, ",") != "no_card,no_secret" {
				t.Errorf("nested results %v, want no_card,no_secret once each", names)
			}
		})
	}
}

// TestNestedTripwireInOuterCheckpoint: with the checkpoint middleware, the
// outer run's stored checkpoint holds the nested run's tripped result once
// after an abort on it, and a resume from that checkpoint is refused with
// the tripwire.
func TestNestedTripwireInOuterCheckpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	inner := scripted.New(scripted.Reply("the SECRET plan"))
	researcher := &pipeline.Agent{Name: "researcher", Model: inner}
	boss := &pipeline.Agent{
		Name:  "boss",
		Model: scripted.New(scripted.CallTool("researcher", `{"input":"look"}`), scripted.Reply("boss done")),
		Tools: []pipeline.Tool{pipeline.AgentTool(researcher)},
	}
	cp := checkpoint.New(memstore.New())
	r := pipeline.NewRunner(pipeline.WithToolErrorsAbort(), pipeline.WithMiddleware(
		cp.Middleware(),
		guardrails.Output(noSecret, guardrails.WithName("no_secret")),
	))
	if _, err := r.Run(ctx, boss, pipeline.UserInput("hi"), pipeline.WithRunID("run_cp")); !errors.Is(err, guardrails.ErrTripwire) {
		t.Fatalf("run error %v, want a tripwire", err)
	}
	stored, err := cp.Store().Load(ctx, "run_cp")
	if err != nil {
		t.Fatal(err)
	}
	wantNestedTrip(t, "stored checkpoint", stored, "no_secret", state.StageOutput)
	if _, err := cp.Resume(ctx, r, boss, "run_cp"); !errors.Is(err, guardrails.ErrTripwire) {
		t.Fatalf("resume error %v, want the tripwire again", err)
	}
	if n := len(inner.Calls()); n != 1 {
		t.Errorf("the nested model was called %d times, want once", n)
	}
}

// TestNestedTripwireStaysStoppedWithOwnRunner: when only the nested run's
// runner has the guardrail (WithAgentToolRunner), a resume of the outer run
// aborted on its tripwire resumes the nested run kept in the outer state,
// which its guardrail refuses: the nested agent does not run again.
func TestNestedTripwireStaysStoppedWithOwnRunner(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			inner := scripted.New(scripted.Reply("the SECRET plan"), scripted.Reply("the SECRET plan"))
			researcher := &pipeline.Agent{Name: "researcher", Model: inner}
			guarded := pipeline.NewRunner(pipeline.WithMiddleware(guardrails.Output(noSecret, guardrails.WithName("no_secret"))))
			boss := &pipeline.Agent{
				Name:  "boss",
				Model: scripted.New(scripted.CallTool("researcher", `{"input":"look"}`), scripted.Reply("boss done")),
				Tools: []pipeline.Tool{pipeline.AgentTool(researcher, pipeline.WithAgentToolRunner(guarded))},
			}
			r := pipeline.NewRunner(pipeline.WithToolErrorsAbort())
			got := runOnce(t, r, boss, m.stream, "hi")
			if !errors.Is(got.err, guardrails.ErrTripwire) {
				t.Fatalf("run error %v, want a tripwire", got.err)
			}
			rt := pipelinetest.RoundTrip(t, got.state)
			again := resumeOnce(t, r, boss, m.stream, rt)
			if !errors.Is(again.err, guardrails.ErrTripwire) {
				t.Fatalf("resume error %v, want the tripwire again", again.err)
			}
			if n := len(inner.Calls()); n != 1 {
				t.Errorf("the nested model was called %d times, want once", n)
			}
			wantNestedTrip(t, "after the refused resume", rt, "no_secret", state.StageOutput)
		})
	}
}
