package persistence_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
)

// chatRun runs one message of a conversation on session sid and returns
// the continuation and model input its first model call had.
func chatRun(t *testing.T, store session.Store, runID, text string, mw ...pipeline.Middleware) (pipeline.Continuation, bool, []string) {
	t.Helper()
	var (
		cont  pipeline.Continuation
		found bool
		input []string
		calls int
	)
	probe := pipeline.Middleware{Name: "probe", Model: func(next pipeline.Model) pipeline.Model {
		return pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
			if calls++; calls == 1 {
				var err error
				if cont, found, err = pipeline.ContinuationOf(c.Turn.Run); err != nil {
					t.Fatal(err)
				}
				for _, it := range c.Input.All() {
					input = append(input, it.Text())
				}
			}
			return next.Respond(ctx, c)
		})
	}}
	mws := append([]pipeline.Middleware{persistence.Middleware(store, persistence.WithContinuation())}, mw...)
	mws = append(mws, probe)
	r := pipeline.NewRunner(pipeline.WithMiddleware(mws...))
	m := scripted.New(scripted.Reply("re: " + text))
	if _, err := r.Run(context.Background(), &pipeline.Agent{Name: "a", Model: m}, []state.Item{state.UserMessage(text)},
		pipeline.WithSessionID(sid), pipeline.WithRunID(runID)); err != nil {
		t.Fatal(err)
	}
	return cont, found, input
}

// TestContinuationAcrossRuns checks that the session remembers the last
// response of a run, so that the next run carries it with the number of
// items the server holds, and that a session popped behind the marks'
// back makes the next run read the whole history without a continuation.
func TestContinuationAcrossRuns(t *testing.T) {
	t.Parallel()
	store := memory.New()
	if _, ok, _ := chatRun(t, store, "r1", "one"); ok {
		t.Fatal("first run of a session has a continuation")
	}
	cont, ok, _ := chatRun(t, store, "r2", "two")
	if want := (pipeline.Continuation{ResponseID: "resp_r1_1", Seen: 2}); !ok || cont != want {
		t.Fatalf("second run: continuation %+v (found %v), want %+v", cont, ok, want)
	}
	cont, ok, _ = chatRun(t, store, "r3", "three")
	if want := (pipeline.Continuation{ResponseID: "resp_r2_1", Seen: 4}); !ok || cont != want {
		t.Fatalf("third run: continuation %+v (found %v), want %+v", cont, ok, want)
	}
	// Pop the last answer: the server's response holds an item the
	// session no longer has.
	if _, _, err := store.Pop(context.Background(), sid); err != nil {
		t.Fatal(err)
	}
	cont, ok, input := chatRun(t, store, "r4", "four")
	if ok {
		t.Fatalf("run after a pop: continuation %+v, want none", cont)
	}
	if want := []string{"one", "re: one", "two", "re: two", "three", "four"}; !cmp.Equal(input, want) {
		t.Fatalf("run after a pop: model input %q, want %q", input, want)
	}
}

// setView is a turn-stage middleware that, on a run's first turn, replaces
// the head of the model input with a summary, as a compaction would.
func setView(id string, from int) pipeline.Middleware {
	return pipeline.Middleware{Name: "view", Turn: func(next pipeline.Handler) pipeline.Handler {
		return pipeline.HandlerFunc(func(ctx context.Context, t *pipeline.Turn) error {
			if t.Number == 1 && !t.Resumed {
				v := &pipeline.View{ID: id, Items: []state.Item{state.SystemMessage("summary " + id)}, From: from}
				if err := pipeline.SetView(t.Run, v); err != nil {
					return err
				}
			}
			return next.ServeTurn(ctx, t)
		})
	}}
}

// TestBoundaryAcrossRuns checks that a run reads its history from the
// boundary the run before recorded: the boundary's items, then only the
// items after it, and not the whole session.
func TestBoundaryAcrossRuns(t *testing.T) {
	t.Parallel()
	store := memory.New()
	chatRun(t, store, "r1", "one")
	chatRun(t, store, "r2", "two")
	// r3 sees four items of history and its input; its view replaces the
	// first three with a summary.
	_, _, input := chatRun(t, store, "r3", "three", setView("b1", 3))
	if want := []string{"summary b1", "re: two", "three"}; !cmp.Equal(input, want) {
		t.Fatalf("compacted run: model input %q, want %q", input, want)
	}
	cont, ok, input := chatRun(t, store, "r4", "four")
	if want := []string{"summary b1", "re: two", "three", "re: three", "four"}; !cmp.Equal(input, want) {
		t.Fatalf("run after the boundary: model input %q, want %q", input, want)
	}
	if want := (pipeline.Continuation{ResponseID: "resp_r3_1", Seen: 4}); !ok || cont != want {
		t.Fatalf("run after the boundary: continuation %+v (found %v), want %+v", cont, ok, want)
	}
	all, err := store.List(context.Background(), sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 8 {
		t.Fatalf("session holds %d items, want all 8", len(all))
	}
}

// TestMarksTakeOneItem: a session's marks do not grow with the
// conversation: each marks session holds the latest mark only.
func TestMarksTakeOneItem(t *testing.T) {
	t.Parallel()
	store := memory.New()
	for i := range 5 {
		chatRun(t, store, fmt.Sprintf("r%d", i), "message", setView(fmt.Sprintf("b%d", i), 1))
	}
	for _, msid := range []string{sid + "#turnkit.tip", sid + "#turnkit.boundary"} {
		items, err := store.List(context.Background(), msid, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != 1 {
			t.Errorf("%s holds %d items after 5 runs, want 1", msid, len(items))
		}
	}
}

// TestNoBoundaryAfterAReplacedContext: a run whose context a handoff
// filter replaced leaves no boundary for the next run (the view's tail is
// not the session's last items then): the next run reads the history
// whole.
func TestNoBoundaryAfterAReplacedContext(t *testing.T) {
	t.Parallel()
	store := memory.New()
	chatRun(t, store, "r1", "one", setView("b1", 1)) // r2 starts from this boundary
	billing := &pipeline.Agent{Name: "billing", Model: scripted.New(scripted.Reply("billed"))}
	triage := &pipeline.Agent{Name: "triage", Model: scripted.New(scripted.CallTool("transfer_to_billing", `{}`)),
		Handoffs: []pipeline.Handoff{{Agent: billing, InputFilter: func(ctx context.Context, in pipeline.HandoffInput) ([]state.Item, error) {
			return []state.Item{state.UserMessage("filtered")}, nil
		}}}}
	r := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store, persistence.WithContinuation())))
	if _, err := r.Run(context.Background(), triage, []state.Item{state.UserMessage("two")},
		pipeline.WithSessionID(sid), pipeline.WithRunID("r2")); err != nil {
		t.Fatal(err)
	}
	_, _, input := chatRun(t, store, "r3", "three")
	if len(input) == 0 || input[0] != "one" {
		t.Fatalf("the run after a replaced context sees %q, want the whole history from \"one\"", input)
	}
}
