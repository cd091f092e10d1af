package persistence_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
)

// readCounter is a session store that counts the items its reads return:
// the items a store that decodes them (SQLite, PostgreSQL, Redis) decodes.
type readCounter struct {
	*memory.Store
	mu   sync.Mutex
	read int
}

func (c *readCounter) count(n int) {
	c.mu.Lock()
	c.read += n
	c.mu.Unlock()
}

func (c *readCounter) take() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.read
	c.read = 0
	return n
}

func (c *readCounter) ListBefore(ctx context.Context, sid, run string, q session.HistoryQuery) (session.History, error) {
	h, err := c.Store.ListBefore(ctx, sid, run, q)
	c.count(len(h.Items))
	return h, err
}

func (c *readCounter) ReadChanges(ctx context.Context, sid string, q session.ChangeQuery) (session.Changes, error) {
	ch, err := c.Store.ReadChanges(ctx, sid, q)
	c.count(len(ch.Items))
	return ch, err
}

// TestHistoryCache runs a conversation, one run per message, through two
// persistence middlewares over one store (two processes): each message's
// model input is the session before it, whoever wrote it, and a message
// reads only the items written since the previous message of its process
// read the session. Without the cache (WithHistoryCache(-1)) every
// message reads the whole history.
func TestHistoryCache(t *testing.T) {
	t.Parallel()
	for _, limit := range []int{0, 5} {
		for _, cached := range []bool{true, false} {
			t.Run(fmt.Sprintf("limit=%d/cached=%v", limit, cached), func(t *testing.T) {
				t.Parallel()
				store := &readCounter{Store: memory.New()}
				t.Cleanup(func() { _ = store.Close() })
				opts := []persistence.Option{persistence.WithLimit(limit)}
				if !cached {
					opts = append(opts, persistence.WithHistoryCache(-1))
				}
				model := scripted.Generate(func(n int) scripted.Step { return scripted.Reply(fmt.Sprint("reply ", n)) })
				agent := &pipeline.Agent{Name: "a", Model: model}
				here := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store, opts...)))
				there := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store, opts...)))
				ctx := t.Context()
				send := func(r *pipeline.Runner, text string) []state.Item {
					t.Helper()
					before, err := store.Store.List(ctx, "s", limit)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := r.Run(ctx, agent, pipeline.UserInput(text), pipeline.WithSessionID("s")); err != nil {
						t.Fatal(err)
					}
					calls := model.Calls()
					got := calls[len(calls)-1].Input.Slice()
					want := append(before, state.UserMessage(text))
					if d := cmp.Diff(show(want), show(got)); d != "" {
						t.Fatalf("model input of %q (-want +got):\n%s", text, d)
					}
					return got
				}
				for i := range 12 {
					got := send(here, fmt.Sprint("here ", i))
					n := store.take()
					since := 2 + 2*((i+2)%3) // the last reply, the other process's messages, the input
					switch {
					case !cached && n != len(got)-1:
						t.Fatalf("message %d without the cache read %d items, want the %d of its history", i, n, len(got)-1)
					case cached && i > 0 && n != since:
						t.Fatalf("message %d read %d items, want the %d written since the last", i, n, since)
					}
					for j := range i % 3 {
						send(there, fmt.Sprint("there ", i, j))
						store.take()
					}
				}
				// Pops by another process, down into what this one read, are
				// seen too.
				for range 7 {
					if _, _, err := store.Pop(ctx, "s"); err != nil {
						t.Fatal(err)
					}
				}
				send(here, "after pop")
			})
		}
	}
}

// roomyHistory is a session store whose ListBefore hands out its items
// with room to spare behind them, as a cache's shared tail has (the items
// after a run's place, or the array's spare capacity): it keeps the whole
// array it handed out, so a test can check that nothing wrote into it.
type roomyHistory struct {
	*memory.Store
	mu     sync.Mutex
	handed []state.Item // the whole array behind the last read's items
}

func (s *roomyHistory) ListBefore(ctx context.Context, sid, run string, q session.HistoryQuery) (session.History, error) {
	h, err := s.Store.ListBefore(ctx, sid, run, q)
	if err != nil {
		return h, err
	}
	n := len(h.Items)
	arr := make([]state.Item, n, n+8)
	copy(arr, h.Items)
	arr = append(arr, state.UserMessage("behind the history").WithSeq(1))
	s.mu.Lock()
	s.handed = arr
	s.mu.Unlock()
	h.Items = arr[:n] // not capped: room behind it
	return h, nil
}

// TestSharedHistoryUnchangedByRun runs a message (a tool call, its
// output, a reply) on a history persistence reads from a store that hands
// it out shared, with room behind it: the run keeps that history as its
// context without a copy, and nothing the run does (its items, its
// model input, the session append) writes into the shared array.
func TestSharedHistoryUnchangedByRun(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store := &roomyHistory{Store: memory.New()}
	t.Cleanup(func() { _ = store.Close() })
	for r := range 3 {
		items := []state.Item{state.UserMessage(fmt.Sprint("message ", r)).WithSeq(1), state.AssistantMessage(fmt.Sprint("msg_", r), "ok").WithSeq(2)}
		if err := store.Append(ctx, "s", fmt.Sprint("history-", r), items); err != nil {
			t.Fatal(err)
		}
	}
	noop := pipeline.NewTool(pipeline.ToolSpec{Name: "noop"}, func(context.Context, json.RawMessage) (string, error) { return "done", nil })
	model := scripted.New(scripted.CallTool("noop", `{}`), scripted.Reply("bye"))
	agent := &pipeline.Agent{Name: "a", Model: model, Tools: []pipeline.Tool{noop}}
	// No cache: the history is the store's ListBefore, as handed out.
	runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store, persistence.WithHistoryCache(-1))))
	if _, err := runner.Run(ctx, agent, []state.Item{state.UserMessage("hi")}, pipeline.WithSessionID("s")); err != nil {
		t.Fatalf("Run = %v", err)
	}
	store.mu.Lock()
	handed := store.handed
	store.mu.Unlock()
	if len(handed) != 7 {
		t.Fatalf("the store handed out %d items and the one behind them, want 6 and 1", len(handed))
	}
	want := []string{"message 0", "ok", "message 1", "ok", "message 2", "ok", "behind the history"}
	for i, it := range handed {
		if it.Text() != want[i] {
			t.Errorf("shared array[%d] = %q after the run, want %q: the run wrote into the history it shares", i, it.Text(), want[i])
		}
	}
	calls := model.Calls()
	if len(calls) != 2 || calls[1].Input.Len() != 9 {
		t.Fatalf("model calls = %d, the second's input %d items; want 2 and the 6 of the history, the message, the call, its output", len(calls), calls[len(calls)-1].Input.Len())
	}
}
