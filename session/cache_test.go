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
