package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

func usage(in, out int64) state.Usage { return state.Usage{InputTokens: in, OutputTokens: out} }

// budgetAgent calls a counting tool twice, one response each, then
// answers; every response reports usage u.
func budgetAgent(runs *atomic.Int32, u state.Usage) (*pipeline.Agent, *scripted.Model) {
	count := pipeline.NewTool(pipeline.ToolSpec{Name: "work"}, func(context.Context, json.RawMessage) (string, error) {
		runs.Add(1)
		return "worked", nil
	})
	m := scripted.New(
		scripted.CallTool("work", `{}`).WithUsage(u),
		scripted.CallTool("work", `{}`).WithUsage(u),
		scripted.Reply("done").WithUsage(u),
	)
	return &pipeline.Agent{Name: "a", Model: m, Tools: []pipeline.Tool{count}}, m
}

// A run that reaches a token limit after a model call ends with a
// *BudgetError before the call's tools run; its state, found with
// StateOf, resumes on a runner with a larger budget, which runs the open
// call and goes on; on a runner with the same budget, the resumed run runs
// the open call and makes no further model call.
func TestBudgetTokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var runs atomic.Int32
	agent, m := budgetAgent(&runs, usage(10, 50))
	tight := pipeline.NewRunner(pipeline.WithBudget(pipeline.Budget{OutputTokens: 100}))
	_, err := tight.Run(ctx, agent, pipeline.UserInput("go"))
	be, ok := errors.AsType[*pipeline.BudgetError](err)
	if !ok || !errors.Is(err, pipeline.ErrBudgetExceeded) {
		t.Fatalf("err = %v, want a *BudgetError", err)
	}
	if be.Limit != "output_tokens" || be.Max != 100 || be.Used != 100 || be.Usage.InputTokens != 20 {
		t.Errorf("BudgetError = %+v", be)
	}
	if got := err.Error(); got != "pipeline: run budget exceeded: output_tokens 100 of 100" {
		t.Errorf("message = %q", got)
	}
	if runs.Load() != 1 || len(m.Calls()) != 2 {
		t.Fatalf("tool ran %d times, model called %d times; want 1 and 2", runs.Load(), len(m.Calls()))
	}
	st, ok := pipeline.StateOf(err)
	if !ok {
		t.Fatal("the error carries no state")
	}
	data, err := state.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}

	// The same budget: the open call runs, no model call is made.
	same, _ := state.Unmarshal(data)
	_, err = tight.Resume(ctx, agent, same)
	if !errors.Is(err, pipeline.ErrBudgetExceeded) || runs.Load() != 2 || len(m.Calls()) != 2 {
		t.Fatalf("resume on the same budget: err %v, %d runs, %d model calls; want the budget error, 2, 2", err, runs.Load(), len(m.Calls()))
	}

	// A larger budget, from the checkpoint taken at the budget error: the
	// open call runs (again: the checkpoint predates the resume above),
	// then the model answers.
	st2, _ := state.Unmarshal(data)
	res, err := pipeline.NewRunner(pipeline.WithBudget(pipeline.Budget{OutputTokens: 1000})).Resume(ctx, agent, st2)
	if err != nil || res.FinalOutput() != "done" {
		t.Fatalf("resume = %q, %v", res.FinalOutput(), err)
	}
	if u := res.State().Usage(); u.OutputTokens != 150 {
		t.Errorf("usage %+v, want 150 output tokens", u)
	}
}

// A response without calls ends the run even when it reaches the
// budget: nothing more is spent.
func TestBudgetFinalResponseFinishes(t *testing.T) {
	t.Parallel()
	m := scripted.New(scripted.Reply("done").WithUsage(usage(500, 5)))
	runner := pipeline.NewRunner(pipeline.WithBudget(pipeline.Budget{InputTokens: 100}))
	res, err := runner.Run(context.Background(), &pipeline.Agent{Name: "a", Model: m}, pipeline.UserInput("go"))
	if err != nil || res.FinalOutput() != "done" {
		t.Fatalf("run = %q, %v", res.FinalOutput(), err)
	}
}

func TestBudgetCost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	prices := map[string]pipeline.Price{"script": {Input: 10, CachedInput: 1, Output: 20}} // "scripted" is priced as an extension of "script"
	var runs atomic.Int32
	// Each response: 100k input tokens of which 50k cached, 50k output:
	// 0.5 + 0.05 + 1 = 1.55.
	agent, _ := budgetAgent(&runs, state.Usage{InputTokens: 100_000, CachedTokens: 50_000, OutputTokens: 50_000})
	_, err := pipeline.NewRunner(pipeline.WithBudget(pipeline.Budget{Cost: 3, Prices: prices})).Run(ctx, agent, pipeline.UserInput("go"))
	be, ok := errors.AsType[*pipeline.BudgetError](err)
	if !ok || be.Limit != "cost" || be.Max != 3 || be.Used != 3.1 || be.Cost != 3.1 {
		t.Fatalf("err = %v (%+v), want the cost limit reached at 3.1", err, be)
	}
	st, _ := pipeline.StateOf(err)
	data, err := state.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	st, _ = state.Unmarshal(data)
	// The cost so far is in the checkpoint: a limit of 4 allows one more
	// call, which reaches it, after the final answer: the run finishes.
	res, err := pipeline.NewRunner(pipeline.WithBudget(pipeline.Budget{Cost: 4, Prices: prices})).Resume(ctx, agent, st)
	if err != nil || res.FinalOutput() != "done" {
		t.Fatalf("resume = %q, %v", res.FinalOutput(), err)
	}
	raw, _ := res.State().Extension("turnkit.budget")
	if string(raw) != `{"cost":4.65}` && string(raw) != `{"cost":4.6499999999999995}` {
		t.Errorf("recorded cost %s, want 4.65", raw)
	}
}

func TestBudgetNoPrice(t *testing.T) {
	t.Parallel()
	m := scripted.New(scripted.Reply("done"))
	runner := pipeline.NewRunner(pipeline.WithBudget(pipeline.Budget{Cost: 1, Prices: map[string]pipeline.Price{"other": {Input: 1}}}))
	agent := &pipeline.Agent{Name: "a", Model: m, Settings: pipeline.ModelSettings{Model: "asked"}}
	_, err := runner.Run(context.Background(), agent, pipeline.UserInput("go"))
	pe, ok := errors.AsType[*pipeline.NoPriceError](err)
	if !ok || !errors.Is(err, pipeline.ErrNoPrice) || pe.Model != "scripted" || pe.Requested != "asked" {
		t.Fatalf("err = %v, want a *NoPriceError for scripted", err)
	}
	if st, ok := pipeline.StateOf(err); !ok || st.Len() != 2 {
		t.Errorf("state %v, want the input and the response recorded", st)
	}
}
