package scripted_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// refundScript is a support script: a refund request calls the refund
// tool, and its output gets an answer; anything else is answered by the
// FAQ.
func refundScript() *scripted.Model {
	return scripted.Rules(
		scripted.On(scripted.AfterOutput("refunded"), scripted.Reply("Your refund is on its way.")),
		scripted.On(scripted.LastUserContains("refund"), scripted.CallTool("refund", `{"order":"A1"}`)),
		scripted.On(nil, scripted.Reply("See the FAQ.")),
	)
}

func refundTool(n *atomic.Int32) pipeline.Tool {
	return pipeline.NewTool(pipeline.ToolSpec{Name: "refund"}, func(context.Context, json.RawMessage) (string, error) {
		n.Add(1)
		return "refunded", nil
	})
}

// TestRulesServeConcurrentRuns: one rules model answers concurrent runs by
// their input, each from the start of its rules.
func TestRulesServeConcurrentRuns(t *testing.T) {
	t.Parallel()
	var refunds atomic.Int32
	agent := &pipeline.Agent{Name: "support", Model: refundScript(), Tools: []pipeline.Tool{refundTool(&refunds)}}
	r := pipeline.NewRunner()
	const runs = 16
	outs := make([]string, runs)
	errs := make([]error, runs)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			msg := "where is my parcel?"
			if i%2 == 0 {
				msg = fmt.Sprintf("please refund order %d", i)
			}
			res, err := r.Run(context.Background(), agent, pipeline.UserInput(msg))
			errs[i] = err
			if res != nil {
				outs[i] = res.FinalOutput()
			}
		})
	}
	wg.Wait()
	for i := range runs {
		want := "See the FAQ."
		if i%2 == 0 {
			want = "Your refund is on its way."
		}
		if errs[i] != nil || outs[i] != want {
			t.Errorf("run %d = %q, %v; want %q", i, outs[i], errs[i], want)
		}
	}
	if refunds.Load() != runs/2 {
		t.Errorf("refund ran %d times, want %d", refunds.Load(), runs/2)
	}
}

// TestRulesResumeInAnotherProcess: a rule's position is the run's, so a
// run paused for approval and resumed from its checkpoint by a new model
// (another process) goes on with the rule's next step.
func TestRulesResumeInAnotherProcess(t *testing.T) {
	t.Parallel()
	script := func() *scripted.Model {
		return scripted.Rules(scripted.On(scripted.ForAgent("clerk"),
			scripted.CallTool("refund", `{}`), scripted.Reply("done")))
	}
	var refunds atomic.Int32
	agent := func() *pipeline.Agent {
		return &pipeline.Agent{Name: "clerk", Model: script(), Tools: []pipeline.Tool{refundTool(&refunds)}}
	}
	r := pipeline.NewRunner(pipeline.WithMiddleware(approval.Require(approval.ByTool("refund"))))
	res, err := r.Run(context.Background(), agent(), pipeline.UserInput("hi"))
	if err != nil || !res.Interrupted() {
		t.Fatalf("run = %v, %v; want a pause", res, err)
	}
	paused := res.State()
	if err := paused.Approve(res.Interruptions()[0].CallID); err != nil {
		t.Fatal(err)
	}
	data, err := state.Marshal(paused)
	if err != nil {
		t.Fatal(err)
	}
	st, err := state.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Resume(context.Background(), agent(), st) // a fresh model, as in another process
	if err != nil || got.FinalOutput() != "done" {
		t.Fatalf("resume = %q, %v; want done", got.FinalOutput(), err)
	}
	if refunds.Load() != 1 {
		t.Errorf("refund ran %d times, want 1", refunds.Load())
	}
}

// TestRulesPerAgent: one model serves two agents (an agent used as a
// tool), each with its own rule, and a call no rule matches fails with a
// typed error.
func TestRulesPerAgent(t *testing.T) {
	t.Parallel()
	m := scripted.Rules(
		scripted.On(scripted.ForAgent("boss"), scripted.CallTool("researcher", `{"input":"look"}`), scripted.Reply("boss done")),
		scripted.On(scripted.All(scripted.ForAgent("researcher"), scripted.LastUserContains("look")), scripted.Reply("found")),
	)
	researcher := &pipeline.Agent{Name: "researcher", Model: m}
	boss := &pipeline.Agent{Name: "boss", Model: m, Tools: []pipeline.Tool{pipeline.AgentTool(researcher)}}
	res, err := pipeline.NewRunner().Run(context.Background(), boss, pipeline.UserInput("go"))
	if err != nil || res.FinalOutput() != "boss done" {
		t.Fatalf("run = %v, %v", res, err)
	}
	var sawNested bool
	for _, it := range res.State().Items().All() {
		if it.Kind() == state.KindToolOutput && it.Text() == "found" {
			sawNested = true
		}
	}
	if !sawNested {
		t.Error("the nested agent's answer is not the call's output")
	}
	_, err = pipeline.NewRunner().Run(context.Background(), &pipeline.Agent{Name: "other", Model: m}, pipeline.UserInput("go"))
	var nr *scripted.NoRuleError
	if !errors.Is(err, scripted.ErrNoRule) || !errors.As(err, &nr) || nr.Agent != "other" || nr.Turn != 1 {
		t.Errorf("error %v, want a NoRuleError for agent other on turn 1", err)
	}
}

// TestFailNextQueuesPerRun: the errors queued for a run fail its next
// calls in order and take no step, so the retried turn gets the step it
// would have had; other runs are not touched.
func TestFailNextQueuesPerRun(t *testing.T) {
	busy, slow := errors.New("overloaded"), errors.New("slow down")
	for _, tc := range []struct {
		name  string
		model *scripted.Model
	}{
		{"rules", scripted.Rules(scripted.On(nil, scripted.Reply("first"), scripted.Reply("second")))},
		{"script", scripted.New(scripted.Reply("first"), scripted.Reply("second"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.model
			m.FailNext("r1", busy)
			m.FailNext("r1", slow) // adds to the queue
			agent := &pipeline.Agent{Name: "a", Model: m}
			r := pipeline.NewRunner()
			for _, want := range []error{busy, slow, nil} {
				res, err := r.Run(context.Background(), agent, pipeline.UserInput("hi"), pipeline.WithRunID("r1"))
				if !errors.Is(err, want) {
					t.Fatalf("run r1 = %v, want %v", err, want)
				}
				if want == nil && res.FinalOutput() != "first" {
					t.Fatalf("run r1 after its failures answered %q, want the first step", res.FinalOutput())
				}
			}
			res, err := r.Run(context.Background(), agent, pipeline.UserInput("hi"), pipeline.WithRunID("r2"))
			if err != nil {
				t.Fatalf("run r2 = %v, want no failure", err)
			}
			if tc.name == "rules" && res.FinalOutput() != "first" {
				t.Fatalf("run r2 answered %q, want the first step of its own", res.FinalOutput())
			}
			runs := make([]string, 0, 4)
			for _, c := range m.Calls() {
				runs = append(runs, c.Run)
			}
			if want := []string{"r1", "r1", "r1", "r2"}; !slices.Equal(runs, want) {
				t.Fatalf("calls recorded for runs %v, want %v", runs, want)
			}
		})
	}
}
