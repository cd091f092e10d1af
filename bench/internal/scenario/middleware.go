package scenario

import (
	"context"
	"fmt"
	"testing"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/guardrails"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tracing"
)

// benchSession is the session the persistence scenarios write to.
const benchSession = "bench"

// passCheck is the guardrails' check: it reads its subject and passes.
func passInput(_ context.Context, _ *pipeline.Agent, items []state.Item) (guardrails.Verdict, error) {
	if len(items) == 0 {
		return guardrails.Trip("no input"), nil
	}
	return guardrails.Verdict{}, nil
}

func passOutput(_ context.Context, _ *pipeline.Agent, out string) (guardrails.Verdict, error) {
	if out == "secret" {
		return guardrails.Trip("secret"), nil
	}
	return guardrails.Verdict{}, nil
}

// memoryStore is the session store of the persistence scenarios.
type memoryStore = memory.Store

// A stack is a middleware setup of a scenario: the middleware, and the
// session store the persistence middleware writes to, if any.
type stack struct {
	name  string
	mws   func(store *memory.Store) []pipeline.Middleware
	store bool
}

// defaultChain returns the full default chain in the recommended order:
// tracing with no provider, logging with zap.NewNop(), persistence on
// store, approval with nothing gated, and one input and one output
// guardrail.
func defaultChain(store *memory.Store) []pipeline.Middleware {
	mws := []pipeline.Middleware{tracing.Middleware()}
	mws = append(mws, loggingMiddleware()...)
	return append(mws,
		persistence.Middleware(store),
		approval.Require(approval.Never()),
		guardrails.Input(passInput),
		guardrails.Output(passOutput),
	)
}

// stacks returns the middleware setups of the middleware scenarios, the
// full default chain last.
func stacks() []stack {
	return []stack{
		{name: "tracing", mws: func(*memory.Store) []pipeline.Middleware { return []pipeline.Middleware{tracing.Middleware()} }},
		{name: "persistence+memory", store: true, mws: func(s *memory.Store) []pipeline.Middleware {
			return []pipeline.Middleware{persistence.Middleware(s)}
		}},
		{name: "approval", mws: func(*memory.Store) []pipeline.Middleware {
			return []pipeline.Middleware{approval.Require(approval.Never())}
		}},
		{name: "guardrails", mws: func(*memory.Store) []pipeline.Middleware {
			return []pipeline.Middleware{guardrails.Input(passInput), guardrails.Output(passOutput)}
		}},
		{name: "chain", store: true, mws: defaultChain},
	}
}

// turns times one turn per iteration of a Runner with the stack's
// middleware, from a history of h items. With a session store, each fresh
// run starts from a session holding the history (written untimed), which
// persistence reads as the run's history.
func (s stack) turns(b *testing.B, hist []state.Item) {
	var store *memory.Store
	var prepare func(*state.Run)
	if s.store {
		store = memory.New()
		defer store.Close()
		prepare = sessionPrepare(b, store, hist)
	}
	runnerTurnsWith(b, hist, prepare, pipeline.WithMiddleware(s.mws(store)...))
}

// sessionPrepare returns the hook that prepares each fresh run of a
// scenario with a session store: the session holds the history, written
// untimed, which persistence reads as the run's history.
func sessionPrepare(b *testing.B, store *memory.Store, hist []state.Item) func(*state.Run) {
	ctx := context.Background()
	var prev *state.Run
	return func(run *state.Run) {
		// The session holds the history and then the previous run's
		// items: pop those, so the session keeps its grown capacity as a
		// long-lived session would, rather than being rebuilt per run.
		if prev == nil {
			if err := store.Append(ctx, benchSession, "history", hist); err != nil {
				b.Fatal(err)
			}
		}
		for i := 0; prev != nil && i < prev.Len(); i++ {
			if _, ok, err := store.Pop(ctx, benchSession); err != nil || !ok {
				b.Fatalf("pop the previous run's items: %v, %v", ok, err)
			}
		}
		runcore.SetSessionID(run, benchSession)
		prev = run
	}
}

// middlewareScenarios returns the per-turn scenarios of each middleware
// alone and of the full default chain, at 10 items of history, and the
// chain at 10 000 items too.
func middlewareScenarios() []Scenario {
	hs := Histories()
	lo, hi := hs[0], hs[len(hs)-1]
	stacks := stacks()
	var out []Scenario
	for _, s := range stacks {
		hist := makeHistory(lo)
		if s.name == "chain" {
			out = append(out, loggingScenario(lo)...)
		}
		out = append(out, Scenario{
			Name: fmt.Sprintf("middleware/%s/history=%d", s.name, lo), Group: "middleware",
			Baseline: fmt.Sprintf("turn/bare/history=%d", lo), PerOp: 1, Unit: "turn",
			Bench: func(b *testing.B) { s.turns(b, hist) },
		})
	}
	chain := stacks[len(stacks)-1]
	big := makeHistory(hi)
	out = append(out, Scenario{
		Name: fmt.Sprintf("middleware/chain/history=%d", hi), Group: "middleware",
		Baseline: fmt.Sprintf("turn/bare/history=%d", hi), PerOp: 1, Unit: "turn",
		Bench: func(b *testing.B) { chain.turns(b, big) },
	})
	return out
}

// chainRun times whole runs of the Runner with the full default chain,
// each in a session that is cleared (untimed) before the next run.
func chainRun(b *testing.B, turns int) {
	store := memory.New()
	defer store.Close()
	ctx := context.Background()
	runnerRun(b, turns, []pipeline.RunOption{pipeline.WithSessionID(benchSession)}, func() {
		b.StopTimer()
		if err := store.Clear(ctx, benchSession); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}, pipeline.WithMiddleware(defaultChain(store)...))
}

// chainRunScenarios returns the run scenarios with the full default chain.
func chainRunScenarios() []Scenario {
	var out []Scenario
	for _, n := range RunLengths() {
		out = append(out, Scenario{
			Name: fmt.Sprintf("run/runner+chain/turns=%d", n), Group: "run",
			Baseline: fmt.Sprintf("run/bare/turns=%d", n), PerOp: n, Unit: "turn",
			Bench: func(b *testing.B) { chainRun(b, n) },
		})
	}
	return out
}
