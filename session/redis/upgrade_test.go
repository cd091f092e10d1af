package redis_test

import (
	_ "embed"
	"errors"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/session/sessiontest"
	"github.com/turnkit/turnkit/state"
)

//go:embed testdata/append-v1.lua
var appendV1 string

// TestRollingUpgrade shares one session between a process of the
// earlier version (its append script, testdata/append-v1.lua, and its
// arguments) and one of this version (a store that remembers places),
// turn about, as during a rolling upgrade: each appends after the
// other's items, this version with the prepared form once it knows the
// run's place, and saves with SaveAppend; each refuses the other's
// items changed (session.ErrConflict) and a second output of a call
// the other stored; and the session lists every item once, in order.
func TestRollingUpgrade(t *testing.T) {
	ctx := t.Context()
	client, prefix := testClient(t)
	s := redis.New(client, redis.WithPrefix(prefix))
	v1 := goredis.NewScript(appendV1)
	old := func(items []state.Item) any {
		t.Helper()
		res, err := s.AppendV1(ctx, v1, "s", "r", items)
		if err != nil {
			t.Fatalf("the earlier version's append: %v", err)
		}
		return res
	}
	if res := old(sessiontest.Batch(0)); res != int64(1) { // the session's first run
		t.Fatalf("the earlier version's first append = %v, want 1", res)
	}
	must(t, s.Append(ctx, "s", "r", sessiontest.Batch(1))) // learns the place
	must(t, s.Append(ctx, "s", "r", sessiontest.Batch(2))) // the prepared form
	if res := old(sessiontest.Batch(3)); res != int64(0) {
		t.Fatalf("the earlier version's append after this one's = %v, want 0", res)
	}
	must(t, s.Append(ctx, "s", "r", sessiontest.Batch(4))) // prepared, after the earlier version's items
	run := state.NewRun("r", "agent")
	runcore.SetSessionID(run, "s")
	must(t, s.SaveAppend(ctx, run, "s", sessiontest.Batch(5)))
	if res := old(sessiontest.Batch(6)); res != int64(0) {
		t.Fatalf("the earlier version's append after a SaveAppend = %v, want 0", res)
	}
	// Retries are no-ops both ways.
	if res := old(sessiontest.Batch(5)); res != int64(0) {
		t.Fatalf("the earlier version's retry of this one's batch = %v, want 0", res)
	}
	must(t, s.Append(ctx, "s", "r", sessiontest.Batch(6)))

	// Each refuses a change of the other's item, and a second output of a
	// call the other stored.
	changed := state.AssistantMessage("msg", "changed").WithSeq(sessiontest.Batch(6)[2].Seq())
	if err := s.Append(ctx, "s", "r", []state.Item{changed}); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("this version changing the earlier one's item = %v, want ErrConflict", err)
	}
	changed = state.AssistantMessage("msg", "changed").WithSeq(sessiontest.Batch(4)[2].Seq())
	if res, ok := old([]state.Item{changed}).(string); !ok || res == "" {
		t.Fatalf("the earlier version changing this one's item = %v, want its Seq", res)
	}
	call := state.ToolCall("fc", "late", "lookup", `{}`).WithSeq(100)
	must(t, s.Append(ctx, "s", "r", []state.Item{call, state.ToolOutput("late", "lookup", `1`).WithSeq(101)}))
	if res, ok := old([]state.Item{state.ToolOutput("late", "lookup", `2`).WithSeq(102)}).(string); !ok || res[:4] != "dup:" {
		t.Fatalf("the earlier version's second output of this one's call = %v, want dup:", res)
	}
	oldCall := state.ToolCall("fc", "early", "lookup", `{}`).WithSeq(103)
	old([]state.Item{oldCall, state.ToolOutput("early", "lookup", `1`).WithSeq(104)})
	if err := s.Append(ctx, "s", "r", []state.Item{state.ToolOutput("early", "lookup", `2`).WithSeq(105)}); !errors.Is(err, session.ErrDuplicateOutput) {
		t.Fatalf("this version's second output of the earlier one's call = %v, want ErrDuplicateOutput", err)
	}

	got, err := s.List(ctx, "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	var want []state.Item
	for i := range int64(7) {
		want = append(want, sessiontest.Batch(i)...)
	}
	want = append(want, call, state.ToolOutput("late", "lookup", `1`).WithSeq(101), oldCall, state.ToolOutput("early", "lookup", `1`).WithSeq(104))
	if len(got) != len(want) {
		t.Fatalf("List = %d items, want %d", len(got), len(want))
	}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Fatalf("item %d = %s, want %s", i, got[i], want[i])
		}
	}
}
