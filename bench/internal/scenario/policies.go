package scenario

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/turnkit/turnkit/middleware/retry"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
)

// conditionalTool is the trivial tool with a condition that always holds,
// and no time limit of its own (the runner's default applies).
type conditionalTool struct{ pipeline.Tool }

func (conditionalTool) Condition() pipeline.Condition {
	return func(context.Context, *pipeline.Turn) bool { return true }
}

func (conditionalTool) Timeout() time.Duration { return 0 }

// A policy is a setup of issue 30's policies, configured so that none of
// them triggers: the runner options, the middleware added innermost to the
// default chain, and whether the tool has a condition.
type policy struct {
	name        string
	opts        []pipeline.Option
	mws         []pipeline.Middleware
	conditional bool
}

// policies returns the setups the policies scenarios time: each policy
// alone, then all of them.
func policies() []policy {
	budget := pipeline.WithBudget(pipeline.Budget{
		InputTokens: 1 << 60, OutputTokens: 1 << 60, Cost: 1e12,
		Prices: map[string]pipeline.Price{"scripted": {Input: 1, Output: 2}},
	})
	timeout := pipeline.WithToolTimeout(time.Hour)
	rt := retry.Middleware()
	return []policy{
		{name: "retry", mws: []pipeline.Middleware{rt}},
		{name: "timeout", opts: []pipeline.Option{timeout}},
		{name: "budget", opts: []pipeline.Option{budget}},
		{name: "conditional", conditional: true},
		{name: "all", opts: []pipeline.Option{timeout, budget}, mws: []pipeline.Middleware{rt}, conditional: true},
	}
}

// policyTurns times the default chain with policy p, as the middleware
// scenarios time the chain alone.
func policyTurns(b *testing.B, hist []state.Item, p policy) {
	store := memory.New()
	defer store.Close()
	s := stacks()[len(stacks())-1] // the full default chain
	tl := trivialTool()
	if p.conditional {
		tl = conditionalTool{tl}
	}
	opts := append([]pipeline.Option{pipeline.WithMiddleware(append(s.mws(store), p.mws...)...)}, p.opts...)
	runnerTurnsTool(b, hist, sessionPrepare(b, store, hist), tl, opts...)
}

// policyScenarios returns the per-turn cost of the default chain with the
// policies of issue 30 configured but not triggered (retries, tool
// timeouts, budgets, conditional tools), against the chain without them,
// at the least and the most history of [Histories]: the policies' cost
// per turn must not grow with the history (invariant 14).
func policyScenarios() []Scenario {
	hs := Histories()
	chain := stacks()[len(stacks())-1]
	var out []Scenario
	for _, h := range []int{hs[0], hs[len(hs)-1]} {
		hist := makeHistory(h)
		base := fmt.Sprintf("policies/chain/history=%d", h)
		out = append(out, Scenario{
			Name: base, Group: "policies", PerOp: 1, Unit: "turn",
			Bench: func(b *testing.B) { chain.turns(b, hist) },
		})
		for _, p := range policies() {
			out = append(out, Scenario{
				Name: fmt.Sprintf("policies/chain+%s/history=%d", p.name, h), Group: "policies", Baseline: base, PerOp: 1, Unit: "turn",
				Bench: func(b *testing.B) { policyTurns(b, hist, p) },
			})
		}
	}
	return out
}
