package bench_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/memstore"
)

// BenchmarkRunStart measures what a chat product pays per user message on
// a long session: one short run (the user's message, one reply) through
// persistence, whose start reads the session's history (through its
// history cache) and makes it the run's context, alone and in the
// crash-safe chain (whose first save refers to that history), at h = 10, 1 000 and
// 10 000 items of history (in runs of 10 items) on memory and SQLite.
// Each message adds its two items to the session; run it with a fixed
// -benchtime (200x) so that h stays what it says. Allocations, bytes and
// time per message are the figures to read: at h = 10 000 they should be
// what they are at h = 10 (the crash-safe chain's history digest hashes
// the items added since the previous message, see state.historyDigest).
func BenchmarkRunStart(b *testing.B) {
	for _, backend := range []string{"memory", "sqlite"} {
		for _, chain := range []string{"persistence", "checkpoint"} {
			for _, h := range []int{10, 1000, 10000} {
				b.Run(backend+"/"+chain+"/h="+strconv.Itoa(h), func(b *testing.B) {
					benchRunStart(b, backend, chain, h)
				})
			}
		}
	}
}

// benchRunStart measures a message on backend through chain: persistence
// alone, or the crash-safe chain (checkpoint with the session, its
// checkpoints in state/memstore on memory, in the SQLite file on SQLite).
func benchRunStart(b *testing.B, backend, chain string, h int) {
	ctx := context.Background()
	var (
		store  session.Store
		states state.Store
	)
	switch backend {
	case "memory":
		store, states = memory.New(), memstore.New()
	default:
		s, err := sqlite.Open(filepath.Join(b.TempDir(), "runstart.db"))
		if err != nil {
			b.Fatal(err)
		}
		store, states = s, s
	}
	defer store.Close()
	const sid = "conversation"
	for r := range max(1, h/conversationRunItems) {
		if err := store.Append(ctx, sid, "history-"+strconv.Itoa(r), conversationRun(r)); err != nil {
			b.Fatal(err)
		}
	}
	agent := &pipeline.Agent{Name: "bench", Model: scripted.Generate(func(int) scripted.Step { return scripted.Reply("done") })}
	mw := persistence.Middleware(store)
	if chain == "checkpoint" {
		mw = checkpoint.New(states, checkpoint.WithSession(store)).Middleware()
	}
	runner := pipeline.NewRunner(pipeline.WithMiddleware(mw))
	input := []state.Item{state.UserMessage("and tomorrow?")}
	message := func() {
		if _, err := runner.Run(ctx, agent, input, pipeline.WithSessionID(sid)); err != nil {
			b.Fatal(err)
		}
	}
	message() // the cache's first read of the session: not a message's cost
	b.ReportAllocs()
	for b.Loop() {
		message()
	}
}
