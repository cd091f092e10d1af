package redis_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/session/sessiontest"
	"github.com/turnkit/turnkit/state"
)

// TestAppendPathsAgree appends the same random batches (calls, outputs
// and messages of a few call IDs, some of them retries of stored items,
// some conflicting with them, some answering a call twice) to three
// sessions: to the first in ascending Seq order through one store, which
// remembers each run's place and sends a common batch in its prepared
// form; to the second in the same order through a new store each time,
// which knows no place, so that the script takes its own common path for
// a common batch; to the third in descending order, which always takes
// the general path. Each append must end the same way in all three
// (stored, refused with session.ErrConflict or with
// session.ErrDuplicateOutput), and the three sessions must hold the same
// items, calls and outputs.
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
		if got := outcome(redis.New(client, redis.WithPrefix(prefix)).Append(ctx, "common", r.id, batch)); got != up {
			t.Fatalf("round %d: batch %v: %s through a store that knows the run's place, %s through one that does not", round, batch, up, got)
		}
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
	// The calls set and the outputs hash (keys 3 and 4) hold the same
	// whichever path wrote them.
	for _, other := range []string{"common", "down"} {
		for k, read := range map[int]func(key string) (any, error){
			3: func(key string) (any, error) { return client.ZRange(ctx, key, 0, -1).Result() },
			4: func(key string) (any, error) { return client.HGetAll(ctx, key).Result() },
		} {
			want, err1 := read(s.SessionKeys("up")[k])
			got, err2 := read(s.SessionKeys(other)[k])
			if err1 != nil || err2 != nil || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("key %d of %q = %v, %v; of the prepared session %v, %v", k, other, got, err2, want, err1)
			}
		}
	}
	if s.CachedPlace("up", "r1") == "" || s.CachedPlace("up", "r2") == "" {
		t.Fatal("the store remembers no place of the runs it appended to")
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

// TestAppendAfterClearByAnother appends through a store that remembers a
// run's place after another store (another worker) cleared the session
// and placed a new run there: the places start again at 1, so the
// remembered place is now the other run's. The append must not write
// into it: the script finds the run unplaced, places it after the other
// run, and the store remembers the new place.
func TestAppendAfterClearByAnother(t *testing.T) {
	ctx := t.Context()
	client, prefix := testClient(t)
	a := redis.New(client, redis.WithPrefix(prefix))
	must(t, a.Append(ctx, "s", "r", sessiontest.Batch(0)))
	must(t, a.Append(ctx, "s", "r", sessiontest.Batch(1)))
	before := placeAnotherRun(t, client, prefix, a)
	must(t, a.Append(ctx, "s", "r", sessiontest.Batch(2)))
	want := append(sessiontest.Batch(0), sessiontest.Batch(2)...)
	wantPlacedAfter(t, a, before, want)
	if it, ok, err := a.Lookup(ctx, "s", "x", want[0].Seq()); err != nil || !ok || !it.Equal(want[0]) {
		t.Fatalf("Lookup(x, %d) = %v, %v, %v: run r wrote into run x's place", want[0].Seq(), it, ok, err)
	}
	if it, ok, err := a.Lookup(ctx, "s", "r", want[3].Seq()); err != nil || !ok || !it.Equal(want[3]) {
		t.Fatalf("Lookup(r, %d) = %v, %v, %v", want[3].Seq(), it, ok, err)
	}
	// And a batch of r placed again goes on in the prepared form.
	must(t, a.Append(ctx, "s", "r", sessiontest.Batch(3)))
	if n, err := a.List(ctx, "s", 0); err != nil || len(n) != len(want)+len(sessiontest.Batch(3)) {
		t.Fatalf("List = %d items, %v", len(n), err)
	}
}

// TestSaveAppendAfterClearByAnother is TestAppendAfterClearByAnother for
// SaveAppend: the store sends the batch in the prepared form at the place
// it remembers, which another store's Clear and new run made another
// run's; the script writes nothing and asks for the general form, and the
// save and the append go through once, the run placed after the other.
func TestSaveAppendAfterClearByAnother(t *testing.T) {
	ctx := t.Context()
	client, prefix := testClient(t)
	a := redis.New(client, redis.WithPrefix(prefix))
	run := state.NewRun("r", "agent")
	runcore.SetSessionID(run, "s")
	must(t, a.SaveAppend(ctx, run, "s", sessiontest.Batch(0)))
	before := placeAnotherRun(t, client, prefix, a)
	must(t, a.SaveAppend(ctx, run, "s", sessiontest.Batch(1)))
	wantPlacedAfter(t, a, before, append(sessiontest.Batch(0), sessiontest.Batch(1)...))
	loaded, err := a.Load(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Version() != run.Version() {
		t.Fatalf("the stored version is %d, want %d: one save a SaveAppend", loaded.Version(), run.Version())
	}
}

// placeAnotherRun has another store (another worker) clear session s,
// whose run r store a remembers, and append run x's first batch there,
// which takes place 1 again, and returns the place a remembered r by.
func placeAnotherRun(t *testing.T, client goredis.UniversalClient, prefix string, a *redis.Store) string {
	t.Helper()
	before := a.CachedPlace("s", "r")
	b := redis.New(client, redis.WithPrefix(prefix))
	must(t, b.Clear(t.Context(), "s"))
	must(t, b.Append(t.Context(), "s", "x", sessiontest.Batch(0)))
	return before
}

// wantPlacedAfter checks that store a remembers run r of session s at a
// place other than before, its place before another store cleared the
// session and appended run x, and that the session lists want: run x's
// batch, then run r's.
func wantPlacedAfter(t *testing.T, a *redis.Store, before string, want []state.Item) {
	t.Helper()
	if after := a.CachedPlace("s", "r"); after == before || after == "" {
		t.Fatalf("the remembered place of run r is %q, was %q: want the new one", after, before)
	}
	got, err := a.List(t.Context(), "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("List = %v, want run x's batch then run r's", got)
	}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Fatalf("item %d = %s, want %s (run x's batch, then run r's)", i, got[i], want[i])
		}
	}
}
