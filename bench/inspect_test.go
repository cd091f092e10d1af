package bench_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/turnkit/turnkit/inspect"
	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
)

// listOnly hides a store's Pager, so that the inspector reads the whole
// session for every page: the fallback for stores without an index of
// pages.
type listOnly struct{ session.Store }

// BenchmarkInspect is the server time of the inspector's pages over a
// SQLite session of 10 000 items (100 runs of 100 items), with 1 000
// checkpoints: the newest page of the timeline, the page 5 000 items
// back, the unfinished runs, the sessions, a run's page; against the store's
// own read of a page (the floor) and the timeline read whole (a store
// without session.Pager).
func BenchmarkInspect(b *testing.B) {
	ctx := context.Background()
	store, err := sqlite.Open(filepath.Join(b.TempDir(), "inspect.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	const runs, perRun = 100, 100
	for r := range runs {
		items := make([]state.Item, perRun)
		for i := range items {
			seq := int64(i + 1)
			switch i % 3 {
			case 0:
				items[i] = state.UserMessage("message " + strconv.Itoa(i) + " of run " + strconv.Itoa(r)).WithSeq(seq)
			case 1:
				items[i] = state.ToolCall("fc_"+strconv.Itoa(i), "call_"+strconv.Itoa(i), "lookup", `{"q":"weather in Paris"}`).WithSeq(seq)
			default:
				items[i] = state.ToolOutput("call_"+strconv.Itoa(i-1), "lookup", `{"temp_c":18,"sky":"clear"}`).WithSeq(seq)
			}
		}
		if err := store.Append(ctx, "long", "run-"+strconv.Itoa(r), items); err != nil {
			b.Fatal(err)
		}
	}
	for r := range 1000 {
		run := state.NewRun("ckpt-"+strconv.Itoa(r), "agent")
		runcore.SetSessionID(run, "s-"+strconv.Itoa(r%50))
		if err := store.Save(ctx, run); err != nil {
			b.Fatal(err)
		}
	}
	h := inspect.New(store, store, inspect.WithPageSize(50))
	whole := inspect.New(listOnly{store}, store, inspect.WithPageSize(50))
	middle, err := store.ListPage(ctx, "long", session.PageQuery{Limit: 5000})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		h    http.Handler
		url  string
	}{
		{"timeline/newest", h, "/session?id=long"},
		{"timeline/5000-back", h, "/session?id=long&cursor=" + middle.Next},
		{"timeline/whole-read", whole, "/session?id=long"},
		{"runs/unfinished", h, "/runs?status=unfinished"},
		{"sessions", h, "/"},
		{"run", h, "/run?id=ckpt-500"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, bc.url, nil)
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				bc.h.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("GET %s = %d: %s", bc.url, w.Code, w.Body)
				}
			}
		})
	}
	b.Run("store-page-only", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := store.ListPage(ctx, "long", session.PageQuery{Limit: 50}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
