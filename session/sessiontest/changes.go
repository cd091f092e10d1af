package sessiontest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// readChanges reads ReadChanges or fails the test.
func readChanges(t *testing.T, r session.ChangeReader, sid string, q session.ChangeQuery) session.Changes {
	t.Helper()
	ch, err := r.ReadChanges(ctx(t), sid, q)
	if err != nil {
		t.Fatalf("ReadChanges(%q, %+v) = %v", sid, q, err)
	}
	return ch
}

func placedItems(ps []session.Placed) []state.Item {
	out := make([]state.Item, len(ps))
	for i, p := range ps {
		out[i] = p.Item
	}
	return out
}

// testChanges checks session.ChangeReader: the items written since a
// stamp, wherever they are placed, with their places; a generation that
// moves on every removal and on nothing else.
func testChanges(t *testing.T, s session.Store) {
	r, ok := s.(session.ChangeReader)
	if !ok {
		t.Skipf("%T is not a session.ChangeReader", s)
	}
	sid := newSessionID(t)
	empty := readChanges(t, r, sid, session.ChangeQuery{RunID: "a"})
	if len(empty.Items) != 0 || empty.Stamp < 1 || empty.RunPlace != 0 {
		t.Fatalf("ReadChanges(empty session) = %+v; want no items, a stamp of at least 1, no place", empty)
	}
	mustAppend(t, s, sid, "a", items("a", 1, 2))
	mustAppend(t, s, sid, "b", items("b", 1))
	all := readChanges(t, r, sid, session.ChangeQuery{RunID: "b"})
	if diff := cmp.Diff(views(concat(items("a", 1, 2), items("b", 1))), views(placedItems(all.Items))); diff != "" {
		t.Fatalf("ReadChanges(whole) mismatch (-want +got):\n%s", diff)
	}
	pa, pb := all.Items[0].Place, all.Items[2].Place
	if pa < 1 || all.Items[1].Place != pa || pb <= pa || all.RunPlace != pb {
		t.Fatalf("places: a %d, %d, b %d, run b %d; want a's two equal and at least 1, b's above and reported", pa, all.Items[1].Place, pb, all.RunPlace)
	}
	if all.Stamp <= empty.Stamp || all.Generation != empty.Generation {
		t.Fatalf("after two appends: stamp %d, generation %d; want a stamp above %d, generation %d", all.Stamp, all.Generation, empty.Stamp, empty.Generation)
	}
	last := readChanges(t, r, sid, session.ChangeQuery{Limit: 2, RunID: "new"})
	if diff := cmp.Diff(views(concat(items("a", 2), items("b", 1))), views(placedItems(last.Items))); diff != "" || last.RunPlace != 0 {
		t.Fatalf("ReadChanges(Limit 2) run place %d, mismatch (-want +got):\n%s", last.RunPlace, diff)
	}
	if none := readChanges(t, r, sid, session.ChangeQuery{Since: all.Stamp}); len(none.Items) != 0 || none.Stamp != all.Stamp || none.Generation != all.Generation {
		t.Fatalf("ReadChanges(since the last read, nothing written) = %+v; want nothing at stamp %d, generation %d", none, all.Stamp, all.Generation)
	}
	// An earlier run goes on, and a new one starts: both are changes, at
	// their places, whatever the order they were written in.
	mustAppend(t, s, sid, "c", items("c", 1))
	mustAppend(t, s, sid, "a", items("a", 3))
	since := readChanges(t, r, sid, session.ChangeQuery{Since: all.Stamp, RunID: "c"})
	if diff := cmp.Diff(views(concat(items("a", 3), items("c", 1))), views(placedItems(since.Items))); diff != "" {
		t.Fatalf("ReadChanges(since) mismatch (-want +got):\n%s", diff)
	}
	if since.Items[0].Place != pa || since.Items[1].Place <= pb || since.RunPlace != since.Items[1].Place || since.Generation != all.Generation {
		t.Fatalf("ReadChanges(since) = %+v; want a's place %d, then c's above %d, the generation unchanged", since, pa, pb)
	}
	// A removal moves the generation on; the stamps never go back.
	if _, ok, err := s.Pop(ctx(t), sid); err != nil || !ok {
		t.Fatalf("Pop = %v, %v", ok, err)
	}
	popped := readChanges(t, r, sid, session.ChangeQuery{Since: since.Stamp})
	if popped.Generation <= since.Generation || popped.Stamp < since.Stamp || len(popped.Items) != 0 {
		t.Fatalf("after Pop: %+v; want a generation above %d, a stamp of at least %d, nothing new", popped, since.Generation, since.Stamp)
	}
	if err := s.Clear(ctx(t), sid); err != nil {
		t.Fatalf("Clear = %v", err)
	}
	cleared := readChanges(t, r, sid, session.ChangeQuery{RunID: "a"})
	if cleared.Generation <= popped.Generation || cleared.Stamp < popped.Stamp || len(cleared.Items) != 0 || cleared.RunPlace != 0 {
		t.Fatalf("after Clear: %+v; want a generation above %d, a stamp of at least %d, no items, no place", cleared, popped.Generation, popped.Stamp)
	}
	mustAppend(t, s, sid, "d", items("d", 1))
	again := readChanges(t, r, sid, session.ChangeQuery{Since: cleared.Stamp})
	if diff := cmp.Diff(views(items("d", 1)), views(placedItems(again.Items))); diff != "" || again.Generation != cleared.Generation {
		t.Fatalf("ReadChanges(since the clear) generation %d (want %d), mismatch (-want +got):\n%s", again.Generation, cleared.Generation, diff)
	}
}

// TestCache runs the session.Cache suite: a cache over one handle of a
// store (b) reads what another handle (a) writes to the same sessions, as
// two processes would, and every read through it returns what b's own
// ListBefore returns, while decoding only what was written since the last
// read. open returns the two handles (one store twice where the backend
// has no second handle, such as memory); both are registered for cleanup
// by open. Stores that are not a session.ChangeReader are skipped.
func TestCache(t *testing.T, open func(t *testing.T) (a, b session.Store)) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, a, b session.Store)
	}{
		{"ReadsOnlyWhatIsNew", testCacheNew},
		{"SeesOtherWriters", testCacheOtherWriters},
		{"Concurrent", testCacheConcurrent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := open(t)
			if _, ok := b.(session.ChangeReader); !ok {
				t.Skipf("%T is not a session.ChangeReader", b)
			}
			tt.fn(t, a, b)
		})
	}
}

// counted is a store whose ReadChanges counts the items it returns: the
// items a cache over it decodes.
type counted struct {
	session.Store
	mu    sync.Mutex
	items int
}

func (c *counted) ReadChanges(ctx context.Context, sid string, q session.ChangeQuery) (session.Changes, error) {
	ch, err := c.Store.(session.ChangeReader).ReadChanges(ctx, sid, q)
	c.mu.Lock()
	c.items += len(ch.Items)
	c.mu.Unlock()
	return ch, err
}

func (c *counted) take() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.items
	c.items = 0
	return n
}

// sameHistory reads run's history through the cache and from the store,
// and fails unless they are the same items at the same stamp.
func sameHistory(t *testing.T, c *session.Cache, s session.Store, sid, run string, limit int) session.History {
	t.Helper()
	q := session.HistoryQuery{Limit: limit}
	got, err := c.ListBefore(ctx(t), sid, run, q)
	if err != nil {
		t.Fatalf("cached ListBefore(%q, %q, %d) = %v", sid, run, limit, err)
	}
	want := listBefore(t, s, sid, run, q)
	if diff := cmp.Diff(views(want.Items), views(got.Items)); diff != "" {
		t.Fatalf("cached ListBefore(%q, %d) mismatch (-store +cache):\n%s", run, limit, diff)
	}
	// An empty history's stamp is not read by every store (1 then).
	if len(want.Items) > 0 && got.Stamp != want.Stamp {
		t.Fatalf("cached ListBefore(%q, %d) stamp %d, store's %d", run, limit, got.Stamp, want.Stamp)
	}
	return got
}

// testCacheNew checks that the second read of a conversation decodes only
// the items written since the first, and that what a caller appends to
// the returned slice (capped at its length: its elements are shared, read
// only) does not reach the next read.
func testCacheNew(t *testing.T, a, b session.Store) {
	sid := newSessionID(t)
	cs := &counted{Store: b}
	c := session.NewCache(cs, 0)
	for i := int64(1); i <= 10; i++ {
		mustAppend(t, a, sid, fmt.Sprintf("m%02d", i), items(fmt.Sprintf("m%02d", i), 1, 2, 3, 4))
	}
	first := sameHistory(t, c, b, sid, "next", 0)
	if n := cs.take(); n != 40 {
		t.Fatalf("first read decoded %d items, want the 40 of the session", n)
	}
	if len(first.Items) != cap(first.Items) {
		t.Fatalf("first read: %d items, capacity %d; want a slice capped at its length", len(first.Items), cap(first.Items))
	}
	_ = append(first.Items, item("x", 5)) // the caller's append: copies, changes nothing cached
	mustAppend(t, a, sid, "m11", items("m11", 1, 2, 3, 4))
	second := sameHistory(t, c, b, sid, "next", 0)
	if n := cs.take(); n != 4 {
		t.Fatalf("second read decoded %d items, want the 4 written since the first", n)
	}
	if len(second.Items) != 44 {
		t.Fatalf("second read: %d items, want 44", len(second.Items))
	}
	sameHistory(t, c, b, sid, "next", 6)
	if n := cs.take(); n != 0 {
		t.Fatalf("a read with nothing written decoded %d items, want 0", n)
	}
	// A tail read with a limit stays a tail: reads of it decode what is new.
	sid2 := newSessionID(t)
	for i := int64(1); i <= 40; i++ {
		mustAppend(t, a, sid2, fmt.Sprintf("m%02d", i), items(fmt.Sprintf("m%02d", i), 1, 2, 3, 4))
	}
	sameHistory(t, c, b, sid2, "next", 8)
	if n := cs.take(); n < 8 || n >= 160 {
		t.Fatalf("first read with limit 8 decoded %d items, want a tail of the 160: at least 8, fewer than all", n)
	}
	for i := int64(41); i <= 45; i++ {
		mustAppend(t, a, sid2, fmt.Sprintf("m%02d", i), items(fmt.Sprintf("m%02d", i), 1, 2, 3, 4))
		sameHistory(t, c, b, sid2, "next", 8)
		if n := cs.take(); n != 4 {
			t.Fatalf("read %d with limit 8 decoded %d items, want the 4 new", i, n)
		}
	}
	// The history before a run with a place: the tail holds it.
	sameHistory(t, c, b, sid2, "m44", 8)
	sameHistory(t, c, b, sid2, "m03", 8) // before the tail: from the store
}

// testCacheOtherWriters checks that what another handle does to a session
// (appends at the end and before it, pops, clears) is in the next read
// through the cache.
func testCacheOtherWriters(t *testing.T, a, b session.Store) {
	sid := newSessionID(t)
	c := session.NewCache(b, 0)
	for _, limit := range []int{0, 5} {
		t.Run(fmt.Sprintf("limit=%d", limit), func(t *testing.T) {
			steps := []struct {
				name string
				do   func() error
			}{
				{"append", func() error { return a.Append(ctx(t), sid, "r1", items("r1", 1, 2, 3)) }},
				{"second run", func() error { return a.Append(ctx(t), sid, "r2", items("r2", 1, 2)) }},
				{"earlier run goes on", func() error { return a.Append(ctx(t), sid, "r1", items("r1", 4, 5)) }},
				{"pop", func() error { _, _, err := a.Pop(ctx(t), sid); return err }},
				{"pop and append the same count", func() error {
					if _, _, err := a.Pop(ctx(t), sid); err != nil {
						return err
					}
					return a.Append(ctx(t), sid, "r3", items("r3", 1))
				}},
				{"clear", func() error { return a.Clear(ctx(t), sid) }},
				{"append after clear", func() error { return a.Append(ctx(t), sid, "r4", items("r4", 1, 2, 3)) }},
				{"clear and append again", func() error {
					if err := a.Clear(ctx(t), sid); err != nil {
						return err
					}
					return a.Append(ctx(t), sid, "r5", items("r5", 1, 2, 3))
				}},
				{"this handle appends", func() error { return c.Append(ctx(t), sid, "r6", items("r6", 1, 2, 3, 4, 5, 6)) }},
			}
			for _, st := range steps {
				if err := st.do(); err != nil {
					t.Fatalf("%s: %v", st.name, err)
				}
				sameHistory(t, c, b, sid, "new", limit)
				sameHistory(t, c, b, sid, "r5", limit)
			}
			if err := a.Clear(ctx(t), sid); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// testCacheConcurrent reads sessions through one small cache from many
// goroutines while another handle writes them; each read must be what the
// store held at some moment: a prefix of the session's items, in order.
func testCacheConcurrent(t *testing.T, a, b session.Store) {
	c := session.NewCache(b, 40*1024) // a few sessions' worth: entries are dropped
	sids := []string{newSessionID(t), newSessionID(t), newSessionID(t)}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w, sid := range sids {
		wg.Go(func() {
			for i := range 20 {
				run := fmt.Sprintf("w%d-%02d", w, i)
				if err := a.Append(ctx(t), sid, run, items(run, 1, 2, 3, 4)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for g := range 6 {
		wg.Go(func() {
			for i := range 30 {
				sid := sids[(g+i)%len(sids)]
				h, err := c.ListBefore(ctx(t), sid, "reader", session.HistoryQuery{Limit: []int{0, 7}[i%2]})
				if err != nil {
					errs <- err
					return
				}
				if err := ordered(h.Items); err != nil {
					errs <- fmt.Errorf("read %d of %s: %w", i, sid, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, sid := range sids {
		sameHistory(t, c, b, sid, "reader", 0)
	}
}

// ordered checks that items are whole runs of four (but the first, cut by
// a limit) in the order of their runs' names, which each writer appends
// in order.
func ordered(its []state.Item) error {
	for i := 1; i < len(its); i++ {
		p, q := its[i-1], its[i]
		same := q.Seq() == p.Seq()+1
		next := q.Seq() == 1 && p.Seq() == 4
		if !same && !next {
			return fmt.Errorf("item %d: %v after %v", i, q, p)
		}
	}
	return nil
}
