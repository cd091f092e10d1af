package session

import (
	"cmp"
	"container/list"
	"context"
	"errors"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/turnkit/turnkit/state"
)

// DefaultCacheBytes is the memory budget of a [Cache] made with a budget
// of 0.
const DefaultCacheBytes = 64 << 20

// entryOverhead is what a session's entry is counted for beyond its
// items, so that entries of sessions with nothing cached are bounded too.
const entryOverhead = 256

// tailSlack is how many items past its limit a tail is read with: the
// items a run placed before it reads the history before its place (its
// input, which persistence stores first), so that the tail still holds
// the limit's items before the run.
const tailSlack = 32

// itemOverhead is what a cached item is counted for beyond its JSON: the
// Item value, its place, its text, call ID and name (estimated).
const itemOverhead = 128

// A Cache serves [Store.ListBefore] from the items of sessions it already
// read, decoded, so that the next run of a conversation decodes only what
// was written since. Every read checks the cache against the store first,
// with one [ChangeReader.ReadChanges] from the session's last stamp read:
// the items written since, by this process or any other, are merged in at
// their places, and a removal since (a Pop, a Clear, by anyone) makes the
// session's entry read again whole. So a read through the cache returns
// what the store's own ListBefore would return from one snapshot.
//
// The cache keeps, per session, the tail that reads asked for (the last
// Limit items, or all), and holds at most its budget of bytes over all
// sessions, dropping the least recently read sessions first. A read with a
// Stamp (a checkpoint's history reference), one before the place of a run
// whose items reach into the cached tail, and every read of a store that
// is not a [ChangeReader] (or whose ReadChanges fails with
// [errors.ErrUnsupported]: a wrapper over one that is not), go to the
// store.
//
// A read served from the cache shares the cached items instead of
// copying them (at 10 000 items a copy was 1.3 MB a run start): the
// returned slice is capped at its length, so appending to it copies, and
// the cache never writes an element a read handed out (an item replaced
// or inserted before the end of a tail that was handed out goes into a
// new array). Items are immutable values; a caller must not write the
// returned slice's elements, which other reads share. A run keeps the
// slice persistence gives it as its context (runcore.SetSessionHistory)
// and never writes into it.
//
// A Cache is a [Store]: every method other than ListBefore goes to the
// store it wraps. It is safe for concurrent use.
type Cache struct {
	Store
	r      ChangeReader // nil: every read goes to the store
	budget int64

	// unsupported: the store's ReadChanges failed with
	// errors.ErrUnsupported; every read goes to the store.
	unsupported atomic.Bool

	mu    sync.Mutex
	lru   list.List // of *cachedSession, most recently read first
	byID  map[string]*list.Element
	bytes int64
}

var _ Store = (*Cache)(nil)

// NewCache returns a cache of the histories read from s, holding at most
// maxBytes of items (estimated from their JSON), or [DefaultCacheBytes] if
// maxBytes is 0. If s is not a [ChangeReader] the cache holds nothing and
// every read goes to s.
func NewCache(s Store, maxBytes int64) *Cache {
	if maxBytes == 0 {
		maxBytes = DefaultCacheBytes
	}
	r, _ := s.(ChangeReader)
	return &Cache{Store: s, r: r, budget: maxBytes, byID: make(map[string]*list.Element)}
}

// A cachedSession is the tail of one session as of a write stamp: every
// item placed at or after its first item, or every item of the session if
// whole.
type cachedSession struct {
	id string
	mu sync.Mutex // held while the session is read and merged

	// items and places are the tail's items in order and the place of
	// each. A read hands out a capped part of items (shared, see
	// [Cache]): from then on an element before the end is never written
	// again in that array.
	items      []state.Item
	places     []int64
	shared     bool // items was handed out: copy it before writing an element
	stamp, gen int64
	whole      bool // items are every item of the session
	limit      int  // the Limit the tail was read with (0: all)
	valid      bool
	size       int64 // the bytes counted for items (see cost)

	// Under Cache.mu: the bytes counted for items, and whether the cache
	// dropped the entry (its reader then keeps nothing).
	counted int64
	dropped bool
}

// ListBefore returns what the store's ListBefore would (see
// [Store.ListBefore]), from the cache where it can.
func (c *Cache) ListBefore(ctx context.Context, sessionID, runID string, q HistoryQuery) (History, error) {
	if c.r == nil || q.Stamp > 0 || c.budget < 0 || c.unsupported.Load() {
		return c.Store.ListBefore(ctx, sessionID, runID, q)
	}
	cs := c.entry(sessionID)
	cs.mu.Lock()
	defer cs.mu.Unlock()
	place, err := cs.refresh(ctx, c.r, sessionID, runID, q.Limit)
	if errors.Is(err, errors.ErrUnsupported) {
		// A wrapper over a store that does not read changes: from now on
		// every read goes to the store, and the cache holds nothing.
		c.unsupported.Store(true)
		c.clear()
		return c.Store.ListBefore(ctx, sessionID, runID, q)
	}
	if err != nil {
		return History{}, err
	}
	h, ok := cs.serve(place, q.Limit)
	c.account(cs)
	if !ok {
		return c.Store.ListBefore(ctx, sessionID, runID, q)
	}
	return h, nil
}

// clear drops every entry.
func (c *Cache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.lru.Front(); e != nil; e = e.Next() {
		old := e.Value.(*cachedSession)
		old.counted, old.dropped = 0, true
	}
	c.lru.Init()
	clear(c.byID)
	c.bytes = 0
}

// entry returns the session's entry, made if needed, as the most recently
// read.
func (c *Cache) entry(sessionID string) *cachedSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byID[sessionID]; ok {
		c.lru.MoveToFront(e)
		return e.Value.(*cachedSession)
	}
	cs := &cachedSession{id: sessionID}
	c.byID[sessionID] = c.lru.PushFront(cs)
	return cs
}

// refresh brings the tail up to the store's present: the changes since
// its stamp merged in, or, if it holds nothing or an item was removed
// since, the session's last limit items read again. It returns the place
// of run runID (0: none).
func (cs *cachedSession) refresh(ctx context.Context, r ChangeReader, sessionID, runID string, limit int) (int64, error) {
	if cs.valid {
		ch, err := r.ReadChanges(ctx, sessionID, ChangeQuery{Since: cs.stamp, RunID: runID})
		if err != nil {
			return 0, err
		}
		if ch.Generation == cs.gen {
			cs.merge(ch.Items)
			if cs.valid {
				cs.stamp = ch.Stamp
				cs.trim()
				return ch.RunPlace, nil
			}
		}
		cs.valid = false
	}
	fill := 0
	if limit > 0 {
		fill = limit + tailSlack
	}
	ch, err := r.ReadChanges(ctx, sessionID, ChangeQuery{Limit: fill, RunID: runID})
	if err != nil {
		return 0, err
	}
	cs.items, cs.places = make([]state.Item, len(ch.Items)), make([]int64, len(ch.Items))
	for i, p := range ch.Items {
		cs.items[i], cs.places[i] = p.Item, p.Place
	}
	cs.stamp, cs.gen, cs.limit, cs.shared = ch.Stamp, ch.Generation, max(limit, 0), false
	cs.size = sizeOf(cs.items)
	cs.whole = fill <= 0 || len(ch.Items) < fill
	cs.valid = true
	return ch.RunPlace, nil
}

// cost is what a cached item is counted for: its JSON and the rest of it
// (estimated).
func cost(it state.Item) int64 { return int64(it.RawLen()) + itemOverhead }

func sizeOf(items []state.Item) int64 {
	var n int64
	for _, it := range items {
		n += cost(it)
	}
	return n
}

// compareAt orders the tail's item i against p, by place, then Seq.
func (cs *cachedSession) compareAt(i int, p Placed) int {
	if c := cmp.Compare(cs.places[i], p.Place); c != 0 {
		return c
	}
	return cmp.Compare(cs.items[i].Seq(), p.Item.Seq())
}

// own gives the tail an array of items of its own if a read shares the
// present one, so that an element can be written.
func (cs *cachedSession) own() {
	if cs.shared {
		cs.items, cs.shared = slices.Clone(cs.items), false
	}
}

// merge puts items (ordered, all written after the tail's stamp) at their
// places: appended where they follow the tail, as a run's next turn does;
// inserted where an earlier run went on; left out before a tail that is
// not whole, which holds nothing there.
func (cs *cachedSession) merge(items []Placed) {
	for _, p := range items {
		n := len(cs.items)
		switch {
		case n == 0 && !cs.whole:
			// An empty tail of a session with more before it: nothing to
			// place p after; the tail stays empty until read again.
			cs.valid = false
			return
		case n == 0 || cs.compareAt(n-1, p) < 0:
			// Past the end of every slice a read handed out (each is
			// capped at its length): no copy needed.
			cs.items, cs.places = append(cs.items, p.Item), append(cs.places, p.Place)
			cs.size += cost(p.Item)
		case !cs.whole && cs.compareAt(0, p) > 0:
			// Before the tail: not cached.
		default:
			i, found := sort.Find(n, func(i int) int { return -cs.compareAt(i, p) })
			cs.own()
			if found {
				cs.size -= cost(cs.items[i])
				cs.items[i] = p.Item
			} else {
				cs.items, cs.places = slices.Insert(cs.items, i, p.Item), slices.Insert(cs.places, i, p.Place)
			}
			cs.size += cost(p.Item)
		}
	}
}

// trim drops the front of a tail that grew to twice its length when
// read, keeping that length (its limit and tailSlack): reads of that limit
// still find them all.
func (cs *cachedSession) trim() {
	if n := cs.limit + tailSlack; cs.limit > 0 && len(cs.items) >= 2*n {
		from := len(cs.items) - n
		cs.items, cs.places = slices.Clone(cs.items[from:]), slices.Clone(cs.places[from:])
		cs.size, cs.shared = sizeOf(cs.items), false
		cs.whole = false
	}
}

// serve returns the last limit items (all for limit <= 0) placed before
// place (before none for 0), or false if the tail does not hold them all.
// The items are the tail's own, capped at their length (see [Cache]).
func (cs *cachedSession) serve(place int64, limit int) (History, bool) {
	if !cs.valid {
		return History{}, false
	}
	end := len(cs.items)
	if place > 0 {
		end, _ = slices.BinarySearch(cs.places, place)
	}
	from := 0
	switch {
	case limit > 0 && end >= limit:
		from = end - limit
	case !cs.whole:
		return History{}, false
	}
	h := History{Stamp: cs.stamp}
	if end > from {
		h.Items = cs.items[from:end:end]
		cs.shared = true
	}
	return h, true
}

// account counts the entry's bytes and drops the least recently read
// sessions while the cache holds more than its budget (the entry itself
// too, if it alone exceeds it).
func (c *Cache) account(cs *cachedSession) {
	n := int64(entryOverhead) // an entry with nothing cached counts too
	if cs.valid {
		n += cs.size
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cs.dropped {
		cs.items, cs.places, cs.valid, cs.size = nil, nil, false, 0
		return
	}
	c.bytes += n - cs.counted
	cs.counted = n
	for c.bytes > c.budget && c.lru.Len() > 0 {
		e := c.lru.Back()
		old := e.Value.(*cachedSession)
		c.lru.Remove(e)
		delete(c.byID, old.id)
		c.bytes -= old.counted
		old.counted, old.dropped = 0, true
		if old == cs {
			cs.items, cs.places, cs.valid, cs.size = nil, nil, false, 0
		}
	}
}
