package redis_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/session/sessiontest"
	"github.com/turnkit/turnkit/state"
)

// TestAppendPathsAgree appends the same random batches (calls, outputs
// and messages of a few call IDs, some of them retries of stored items,
// some conflicting with them, some answering a call twice) to two
// sessions: to the first in ascending Seq order, which the append script
// takes its common path for when every item follows the run's stored
// ones, to the second in descending order, which always takes the general
// path. Each append must end the same way in both (stored, refused with
// session.ErrConflict or with session.ErrDuplicateOutput), and the two
// sessions must hold the same items.
func TestAppendPathsAgree(t *testing.T) {
	client, prefix := testClient(t)
	s := redis.New(client, redis.WithPrefix(prefix))
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(28, 2))
	ids := []string{"a", "b", "c"}
	type run struct {
		id    string
		next  int64
		items map[int64]state.Item
	}
	runs := []*run{{id: "r1", next: 1, items: map[int64]state.Item{}}, {id: "r2", next: 1, items: map[int64]state.Item{}}}
	outcome := func(err error) string {
		switch {
		case err == nil:
			return "stored"
		case errors.Is(err, session.ErrDuplicateOutput):
			return "duplicate output"
		case errors.Is(err, session.ErrConflict):
			return "conflict"
		}
		t.Fatalf("append: %v", err)
		return ""
	}
	fast := 0
	for round := range 400 {
		r := runs[rng.IntN(len(runs))]
		var batch []state.Item
		used := map[int64]bool{}
		for range 1 + rng.IntN(4) {
			var it state.Item
			switch k := rng.IntN(10); {
			case k == 0 && r.next > 1: // a retry of an item stored (or offered) before
				seq := 1 + rng.Int64N(r.next-1)
				if old, ok := r.items[seq]; ok {
					it = old
					if rng.IntN(3) == 0 {
						it = state.AssistantMessage("m", fmt.Sprintf("changed %d", round)).WithSeq(seq)
					}
				}
			case k < 4:
				it = state.ToolCall("fc", ids[rng.IntN(len(ids))], "lookup", `{"q":1}`)
			case k < 8:
				it = state.ToolOutput(ids[rng.IntN(len(ids))], "lookup", fmt.Sprintf(`{"n":%d}`, round))
			default:
				it = state.AssistantMessage("m", fmt.Sprintf("text %d", round))
			}
			if it.IsZero() {
				continue
			}
			if it.Seq() == 0 {
				it = it.WithSeq(r.next)
				r.next++
			}
			if used[it.Seq()] {
				continue
			}
			used[it.Seq()] = true
			batch = append(batch, it)
		}
		if len(batch) == 0 {
			continue
		}
		slices.SortFunc(batch, func(a, b state.Item) int { return int(a.Seq() - b.Seq()) })
		up := outcome(s.Append(ctx, "up", r.id, batch))
		down := slices.Clone(batch)
		slices.Reverse(down)
		if len(down) == 1 { // one item ascends: make it two, the same item twice
			down = append(down, down[0])
		}
		if got := outcome(s.Append(ctx, "down", r.id, down)); got != up {
			t.Fatalf("round %d: batch %v: %s ascending, %s descending", round, batch, up, got)
		}
		if up == "stored" {
			fast++
			for _, it := range batch {
				if _, ok := r.items[it.Seq()]; !ok {
					r.items[it.Seq()] = it
				}
			}
		}
	}
	a, err := s.List(ctx, "up", 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.List(ctx, "down", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != len(b) {
		t.Fatalf("%d items ascending, %d descending", len(a), len(b))
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			t.Fatalf("item %d: %s ascending, %s descending", i, a[i], b[i])
		}
	}
	if fast < 100 || len(a) < 300 {
		t.Fatalf("%d batches stored, %d items: too few to compare the paths", fast, len(a))
	}
}

// TestCommonAppendReadsNoMember watches the append script with MONITOR: a
// common batch (a call, its output and a message after the run's stored
// items) checks that nothing of its run is stored at or after its first
// position with one ZLEXCOUNT, whose reply is a number, and reads no
// member; a batch that starts at or before the run's last stored item (a
// retry) reads that item with ZREVRANGEBYLEX and is a no-op. Standalone
// only: MONITOR shows one server.
func TestCommonAppendReadsNoMember(t *testing.T) {
	ctx := t.Context()
	client, prefix := testClient(t)
	s := newStore(t, client, redis.WithPrefix(prefix))
	mon := monitor(t, client)
	must(t, s.Append(ctx, "s", "r", sessiontest.Batch(0)))
	mon.until(t, client, prefix)
	must(t, s.Append(ctx, "s", "r", sessiontest.Batch(1)))
	common := mon.until(t, client, prefix)
	if count(common, `"ZLEXCOUNT"`) != 1 || count(common, `"ZREVRANGEBYLEX"`)+count(common, `"ZRANGEBYLEX"`) != 0 {
		t.Fatalf("a common append ran %q, want one ZLEXCOUNT and no read of a member", common)
	}
	must(t, s.Append(ctx, "s", "r", sessiontest.Batch(1)))
	retry := mon.until(t, client, prefix)
	if count(retry, `"ZREVRANGEBYLEX"`) != 1 || count(retry, `"ZADD"`) != 0 {
		t.Fatalf("a retried append ran %q, want one ZREVRANGEBYLEX and no ZADD", retry)
	}
	if got, err := s.List(ctx, "s", 0); err != nil || len(got) != 6 {
		t.Fatalf("List = %d items, %v, want 6", len(got), err)
	}
}
