package pipelinetest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/pipeline/pipelinetest"
	"github.com/turnkit/turnkit/state"
)

// TestEffectToolRecordsUnderTheCallsKey runs effect tools in a real
// Runner: each execution is in the ledger under its call's idempotency
// key, During's error is the call's error, and Output makes the output.
func TestEffectToolRecordsUnderTheCallsKey(t *testing.T) {
	var ledger pipelinetest.Ledger
	var mu sync.Mutex
	var keys []string // the calls' idempotency keys, as the core gives them
	seen := func(c *pipeline.ToolCall) {
		mu.Lock()
		defer mu.Unlock()
		keys = append(keys, c.IdempotencyKey())
	}
	refused := errors.New("card declined")
	pay := &pipelinetest.EffectTool{Name: "pay", Ledger: &ledger,
		During: func(_ context.Context, c *pipeline.ToolCall) error { seen(c); return refused }}
	mail := &pipelinetest.EffectTool{Name: "mail", Ledger: &ledger,
		During: func(_ context.Context, c *pipeline.ToolCall) error { seen(c); return nil },
		Output: func(c *pipeline.ToolCall) string { return "sent " + c.CallID }}
	agent := &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{pay, mail}, Model: scripted.New(
		scripted.Respond(scripted.Call("mail", `{}`), scripted.Call("pay", `{}`)),
		scripted.Reply("done"),
	)}
	res, err := pipeline.NewRunner().Run(context.Background(), agent, pipeline.UserInput("go"), pipeline.WithRunID("r1"))
	if err != nil {
		t.Fatal(err)
	}
	var outputs []string
	for _, it := range res.NewItems() {
		if it.Kind() == state.KindToolOutput {
			outputs = append(outputs, it.Text())
		}
	}
	if len(outputs) != 2 || !strings.HasPrefix(outputs[0], "sent call_") || !strings.Contains(outputs[1], refused.Error()) {
		t.Errorf("outputs = %q, want mail's Output and pay's During error", outputs)
	}
	got := ledger.All()
	if len(got) != 2 || ledger.Runs("pay") != 1 || ledger.Runs("mail") != 1 || len(keys) != 2 {
		t.Fatalf("ledger = %v, want one execution of each tool", got)
	}
	for _, e := range got {
		if !slices.Contains(keys, e.Key) || ledger.Count(e.Key) != 1 || !slices.Equal(ledger.Keys(e.Tool), []string{e.Key}) {
			t.Errorf("execution %v: not under its call's idempotency key %v, or counted wrong", e, keys)
		}
	}
}

// TestLedgerConcurrentUse records from many goroutines; -race checks it.
func TestLedgerConcurrentUse(t *testing.T) {
	var ledger pipelinetest.Ledger
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				ledger.Record("t", fmt.Sprintf("k%d-%d", i, j))
				_ = ledger.Len()
			}
		})
	}
	wg.Wait()
	if n := ledger.Runs("t"); n != 400 || ledger.Len() != 400 {
		t.Errorf("Runs = %d, Len = %d, want 400", n, ledger.Len())
	}
}

// TestLedgerOfRun: a run's executions are found by its ID alone, not by
// those of a run whose ID only starts like it.
func TestLedgerOfRun(t *testing.T) {
	var ledger pipelinetest.Ledger
	pay := &pipelinetest.EffectTool{Name: "pay", Ledger: &ledger}
	agent := &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{pay}, Model: scripted.Rules(
		scripted.On(scripted.AfterOutput(""), scripted.Reply("paid")),
		scripted.On(nil, scripted.Respond(scripted.Call("pay", `{}`), scripted.Call("pay", `{}`))),
	)}
	for _, id := range []string{"r1", "r10"} {
		if _, err := pipeline.NewRunner().Run(context.Background(), agent, pipeline.UserInput("go"), pipeline.WithRunID(id)); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"r1", "r10"} {
		got := ledger.OfRun(id)
		if len(got) != 2 || got[0].Key == got[1].Key {
			t.Fatalf("OfRun(%s) = %v, want its two calls", id, got)
		}
		for _, e := range got {
			if !strings.HasPrefix(e.Key, id+"/call_") || e.Tool != "pay" {
				t.Errorf("OfRun(%s) holds %v", id, e)
			}
		}
	}
	if got := ledger.OfRun("r"); len(got) != 0 {
		t.Errorf("OfRun(r) = %v, want none", got)
	}
}
