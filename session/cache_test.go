package session_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
)

// TestCacheBudget reads more sessions than the cache's budget holds: it
// keeps at most its budget, dropping the least recently read, keeps
// nothing of a session larger than the whole budget, and every read is
// still the store's.
func TestCacheBudget(t *testing.T) {
	store := memory.New()
	t.Cleanup(func() { _ = store.Close() })
	ctx := t.Context()
	text := strings.Repeat("x", 100)
	for s := range 20 {
		items := make([]state.Item, 50)
		for i := range items {
			items[i] = state.UserMessage(text).WithSeq(int64(i + 1))
		}
		if err := store.Append(ctx, fmt.Sprint("s", s), "r", items); err != nil {
			t.Fatal(err)
		}
	}
	const budget = 60_000 // about five of the sessions
	c := session.NewCache(store, budget)
	read := func(sid string) {
		t.Helper()
		h, err := c.ListBefore(ctx, sid, "next", session.HistoryQuery{})
		if err != nil {
			t.Fatal(err)
		}
		want, err := store.List(ctx, sid, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(h.Items) != len(want) {
			t.Fatalf("%s: %d items through the cache, %d in the store", sid, len(h.Items), len(want))
		}
		if bytes, _ := c.Held(); bytes > budget {
			t.Fatalf("after reading %s the cache holds %d bytes, over its budget of %d", sid, bytes, budget)
		}
	}
	for s := range 20 {
		read(fmt.Sprint("s", s))
	}
	bytes, n := c.Held()
	if n == 0 || n >= 20 || bytes == 0 {
		t.Fatalf("the cache holds %d sessions in %d bytes; want some, not all 20", n, bytes)
	}
	big := make([]state.Item, 1000)
	for i := range big {
		big[i] = state.UserMessage(text).WithSeq(int64(i + 1))
	}
	if err := store.Append(ctx, "big", "r", big); err != nil {
		t.Fatal(err)
	}
	read("big")
	read("big")
	if after, _ := c.Held(); after > budget {
		t.Fatalf("after a session over the budget the cache holds %d bytes", after)
	}
}

// TestCacheWithoutChangeReader passes every read to a store that reads
// no changes.
func TestCacheWithoutChangeReader(t *testing.T) {
	store := memory.New()
	t.Cleanup(func() { _ = store.Close() })
	ctx := t.Context()
	if err := store.Append(ctx, "s", "r", []state.Item{state.UserMessage("hi").WithSeq(1)}); err != nil {
		t.Fatal(err)
	}
	c := session.NewCache(struct{ session.Store }{store}, 0)
	h, err := c.ListBefore(ctx, "s", "next", session.HistoryQuery{})
	if err != nil || len(h.Items) != 1 {
		t.Fatalf("ListBefore = %v, %v; want the one item", h, err)
	}
	if bytes, n := c.Held(); bytes != 0 || n != 0 {
		t.Fatalf("the cache holds %d sessions in %d bytes; want none", n, bytes)
	}
}

// unsupported is a store whose ReadChanges fails with
// errors.ErrUnsupported, as a wrapper's over a store that reads none.
type unsupported struct{ session.Store }

func (unsupported) ReadChanges(context.Context, string, session.ChangeQuery) (session.Changes, error) {
	return session.Changes{}, fmt.Errorf("no changes here: %w", errors.ErrUnsupported)
}

// TestCacheChangesUnsupported passes every read to a store whose
// ReadChanges is unsupported (session/encrypt's wrapper over a store that
// reads no changes) instead of failing them.
//
// Checked to fail without it: the read failed with the ReadChanges error.
func TestCacheChangesUnsupported(t *testing.T) {
	store := memory.New()
	t.Cleanup(func() { _ = store.Close() })
	ctx := t.Context()
	if err := store.Append(ctx, "s", "r", []state.Item{state.UserMessage("hi").WithSeq(1)}); err != nil {
		t.Fatal(err)
	}
	c := session.NewCache(unsupported{store}, 0)
	for _, sid := range []string{"s", "s", "t", "u"} {
		h, err := c.ListBefore(ctx, sid, "next", session.HistoryQuery{})
		if sid != "s" {
			if err != nil || len(h.Items) != 0 {
				t.Fatalf("ListBefore(%s) = %v, %v; want nothing", sid, h, err)
			}
			continue
		}
		if err != nil || len(h.Items) != 1 || h.Items[0].Text() != "hi" {
			t.Fatalf("ListBefore = %v, %v; want the one item", h, err)
		}
	}
	if bytes, n := c.Held(); bytes != 0 || n != 0 {
		t.Fatalf("the cache holds %d sessions in %d bytes; want none", n, bytes)
	}
}

// appendUsers appends n user messages of run runID, at positions from
// seq on, to session sid.
func appendUsers(t *testing.T, s session.Store, sid, runID string, seq int64, n int) {
	t.Helper()
	items := make([]state.Item, n)
	for i := range items {
		items[i] = state.UserMessage(fmt.Sprintf("%s#%d", runID, seq+int64(i))).WithSeq(seq + int64(i))
	}
	if err := s.Append(t.Context(), sid, runID, items); err != nil {
		t.Fatalf("Append(%q, %q) = %v", sid, runID, err)
	}
}

// TestCacheSharesHistory reads a 10 000-item history twice through the
// cache: the second read hands out the same items, not a copy (a copy was
// 1.3 MB a read), capped at their length, and costs allocations that do
// not grow with the history.
func TestCacheSharesHistory(t *testing.T) {
	store := memory.New()
	t.Cleanup(func() { _ = store.Close() })
	ctx := t.Context()
	appendUsers(t, store, "s", "r1", 1, 10_000)
	c := session.NewCache(store, 0)
	read := func() session.History {
		h, err := c.ListBefore(ctx, "s", "next", session.HistoryQuery{})
		if err != nil {
			t.Fatalf("cached ListBefore = %v", err)
		}
		return h
	}
	first, second := read(), read()
	if len(second.Items) != 10_000 || cap(second.Items) != len(second.Items) {
		t.Fatalf("second read: %d items, capacity %d; want 10000, capped", len(second.Items), cap(second.Items))
	}
	if &first.Items[0] != &second.Items[0] {
		t.Errorf("the second read copied the history; want the cached items shared")
	}
	if allocs := testing.AllocsPerRun(20, func() { read() }); allocs > 4 {
		t.Errorf("a read of a cached 10 000-item history allocated %v times; want at most 4 (no copy)", allocs)
	}
}

// TestCacheSharedHistoryUnchanged holds a history the cache handed out
// while the session changes in every way the cache merges: a caller's
// append, items after the tail, and an earlier run going on, whose items
// are inserted before the end of the tail that was handed out. The held
// history never changes, and every later read is the store's.
func TestCacheSharedHistoryUnchanged(t *testing.T) {
	store := memory.New()
	t.Cleanup(func() { _ = store.Close() })
	ctx := t.Context()
	appendUsers(t, store, "s", "r1", 1, 20)
	appendUsers(t, store, "s", "r2", 1, 20)
	c := session.NewCache(store, 0)
	read := func() session.History {
		t.Helper()
		h, err := c.ListBefore(ctx, "s", "next", session.HistoryQuery{})
		if err != nil {
			t.Fatalf("cached ListBefore = %v", err)
		}
		want, err := store.ListBefore(ctx, "s", "next", session.HistoryQuery{})
		if err != nil {
			t.Fatalf("store's ListBefore = %v", err)
		}
		if got, wantText := texts(h.Items), texts(want.Items); got != wantText {
			t.Fatalf("cached read:\n%s\nwant the store's:\n%s", got, wantText)
		}
		return h
	}
	first := read()
	_ = append(first.Items, state.UserMessage("caller's").WithSeq(99))
	appendUsers(t, store, "s", "r2", 21, 5) // after the tail: it grows
	held := read()                          // a tail with room to spare
	before := texts(held.Items)
	appendUsers(t, store, "s", "r1", 21, 5) // inserted before r2's items
	if after := read(); len(after.Items) != 50 {
		t.Fatalf("read after both runs went on: %d items, want 50", len(after.Items))
	}
	if got := texts(held.Items); got != before {
		t.Errorf("the history handed out changed under its holder:\n%s\nwant:\n%s", got, before)
	}
}

// texts joins the items' texts, one a line.
func texts(items []state.Item) string {
	var b strings.Builder
	for _, it := range items {
		b.WriteString(it.Text())
		b.WriteByte('\n')
	}
	return b.String()
}
