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
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
)

// conversationRunItems is the length of each run of the conversation
// BenchmarkConversationReads builds: a user message, four tool calls with
// their outputs, a reply.
const conversationRunItems = 10

// BenchmarkConversationReads measures invariant 14 (a turn's cost does not
// grow with the history) for the reads beside the turn: the inspector's
// pages (inspect.Handler on SQLite) and the run index (state.Lister), over
// one conversation of n = 10, 1 000 and 10 000 items (in runs of 10
// items) with n checkpoints of runs in that session. Every page holds 10
// entries (items, runs, sessions) at each size, so each sub-benchmark at
// n=10000 should cost what it costs at n=10 (n=1000 tells a constant step,
// such as integers of 256 and more boxed, from growth).
func BenchmarkConversationReads(b *testing.B) {
	for _, items := range []int{10, 1000, 10000} {
		b.Run("n="+strconv.Itoa(items), func(b *testing.B) {
			benchConversationReads(b, items)
		})
	}
}

func benchConversationReads(b *testing.B, items int) {
	ctx := context.Background()
	store, err := sqlite.Open(filepath.Join(b.TempDir(), "conversation.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	const sid = "conversation"
	for r := range max(1, items/conversationRunItems) {
		if err := store.Append(ctx, sid, "run-"+strconv.Itoa(r), conversationRun(r)); err != nil {
			b.Fatal(err)
		}
	}
	for r := range items {
		run := state.NewRun("run-"+strconv.Itoa(r), "agent")
		runcore.SetSessionID(run, sid)
		if err := store.Save(ctx, run); err != nil {
			b.Fatal(err)
		}
	}
	const page = 10
	last := "run-" + strconv.Itoa(items-1)
	h := inspect.New(store, store, inspect.WithPageSize(page))
	for _, bc := range []struct{ name, url string }{
		{"inspect/sessions", "/"},
		{"inspect/timeline", "/session?id=" + sid},
		{"inspect/runs", "/runs?session=" + sid},
		{"inspect/run", "/run?id=" + last},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, bc.url, nil)
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("GET %s = %d: %s", bc.url, w.Code, w.Body)
				}
			}
		})
	}
	for _, bc := range []struct {
		name string
		q    state.RunQuery
	}{
		{"runindex/newest", state.RunQuery{Limit: page}},
		{"runindex/session", state.RunQuery{SessionID: sid, Limit: page}},
		{"runindex/status", state.RunQuery{Status: state.RunUnfinished, Limit: page}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p, err := store.ListRuns(ctx, bc.q)
				if err != nil {
					b.Fatal(err)
				}
				if len(p.Runs) != page {
					b.Fatalf("a page of %d runs, want %d", len(p.Runs), page)
				}
			}
		})
	}
}

// conversationRun returns the items of the conversation's run r.
func conversationRun(r int) []state.Item {
	items := make([]state.Item, 0, conversationRunItems)
	items = append(items, state.UserMessage("message of run "+strconv.Itoa(r)).WithSeq(1))
	for c := range (conversationRunItems - 2) / 2 {
		id := "call_" + strconv.Itoa(r) + "_" + strconv.Itoa(c)
		seq := int64(len(items) + 1)
		items = append(items,
			state.ToolCall("fc_"+id, id, "lookup", `{"q":"weather in Paris"}`).WithSeq(seq),
			state.ToolOutput(id, "lookup", `{"temp_c":18,"sky":"clear"}`).WithSeq(seq+1))
	}
	return append(items, state.AssistantMessage("msg_"+strconv.Itoa(r), "It is 18°C and clear.").WithSeq(int64(len(items)+1)))
}
