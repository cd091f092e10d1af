package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

var (
	_ session.Store        = (*Store)(nil)
	_ session.ChangeReader = (*Store)(nil)
)

// A Store keeps sessions in memory. The zero Store is not usable; call
// [New]. A Store is safe for concurrent use by multiple goroutines.
type Store struct {
	mu       sync.Mutex
	sessions map[string]*sessionData
	closed   bool
	// The listing's index (browse.go): the last serial given, the
	// sessions' serials and IDs, each sorted, and the session of a serial.
	serial   int64
	newest   []int64
	ids      []string
	bySerial map[int64]string
	// stamps holds the last write stamp of each session without data (a
	// session with data keeps it in its sessionData: see [Store.stamp]);
	// Clear moves it here, so that a session's stamps only go up.
	stamps map[string]int64
	// gens holds each session's generation: how many times Pop removed
	// an item or Clear ran (see [session.Changes]).
	gens map[string]int64
}

// New returns an empty store.
func New() *Store {
	return &Store{sessions: make(map[string]*sessionData), bySerial: make(map[int64]string), stamps: make(map[string]int64),
		gens: make(map[string]int64)}
}

// entry is a stored item with its sort key, (the run's place, Seq), and
// its write stamp.
type entry struct {
	place int
	stamp int64
	item  state.Item
}

// A writeRef is where an entry is in the order entries were written: its
// write stamp, and its place and position, by which it is found among the
// entries. It holds no pointer: the write order costs the collector
// nothing to scan and an append no write barrier, where a copy of the
// entry (104 bytes, five pointers) cost both, and 80 more bytes an item.
type writeRef struct {
	stamp int64
	place int
	seq   int64
}

// A new session starts with room for the items and the calls of a short
// run (a message, a few tool turns, the answer) rather than growing its
// slices through lengths 1, 2, 4, 8 and its maps of calls and outputs
// from one group: a session cleared between conversations, or a new one
// per conversation, made 27 allocations in its first run of ten tool
// turns, 17 with this room (3.3 KB of entries, taken at once).
const (
	firstEntriesRoom = 16
	firstCallsRoom   = 16
)

type sessionData struct {
	serial  int64          // the session's number in the listing
	stamp   int64          // the session's last write stamp
	lastRun string         // the run that appended last, at place lastAt:
	lastAt  int            // a turn's append finds its place without a lookup
	places  map[string]int // run ID → its place, fixed at its first append
	runs    map[int]string // place → run ID
	entries []entry        // sorted by (place, seq)
	written []writeRef     // where the same are, in the order they were written: by stamp
	// ledgers holds each run's ledger of calls, by place: a turn's append
	// looks its calls up among its own run's, in maps that grow with the
	// run, not with the session (a long conversation's earlier runs are
	// never hashed into or probed again). The first run's ledger and its
	// slot live in the session's own allocation.
	ledgers    []*runCalls
	firstRun   runCalls
	ledgerRoom [1]*runCalls
}

// runCalls is one run's ledger of calls: the positions of its calls by
// call ID, and the position of each answered call's output.
type runCalls struct {
	calls   map[string]callSeqs // call ID → the positions of the run's calls with it
	answers map[answerKey]int64 // a call → the position of its output
}

// ledger returns the ledger of the run at place, or nil for none.
func (sd *sessionData) ledger(place int) *runCalls {
	if sd == nil || place >= len(sd.ledgers) {
		return nil
	}
	return sd.ledgers[place]
}

// addLedger gives the run just placed at place (the next place) its
// ledger: the session's first run gets the one in the session's own
// allocation, with room for the calls of a short run.
func (sd *sessionData) addLedger(place int) *runCalls {
	rc := &sd.firstRun
	if place == 0 {
		rc.calls, rc.answers = make(map[string]callSeqs, firstCallsRoom), make(map[answerKey]int64, firstCallsRoom)
		sd.ledgers = append(sd.ledgerRoom[:0], rc)
		return rc
	}
	rc = &runCalls{calls: make(map[string]callSeqs), answers: make(map[answerKey]int64)}
	sd.ledgers = append(sd.ledgers, rc)
	return rc
}

// callSeqs holds the positions of a run's calls with one ID, sorted: the
// first inline, as a call ID is almost always used once, so that storing
// a call allocates no slice; first is 0 when there is none.
type callSeqs struct {
	first int64
	rest  []int64 // each after first
}

// before returns the latest position before seq, or 0.
func (c callSeqs) before(seq int64) int64 {
	if i, _ := slices.BinarySearch(c.rest, seq); i > 0 {
		return c.rest[i-1]
	}
	if c.first < seq {
		return c.first
	}
	return 0
}

// add adds position seq, which is not among them.
func (c *callSeqs) add(seq int64) {
	if c.first == 0 {
		c.first = seq
		return
	}
	if seq < c.first {
		c.first, seq = seq, c.first
	}
	i, _ := slices.BinarySearch(c.rest, seq)
	c.rest = slices.Insert(c.rest, i, seq)
}

// remove removes position seq and reports whether none are left.
func (c *callSeqs) remove(seq int64) (empty bool) {
	if c.first != seq {
		c.rest = slices.DeleteFunc(c.rest, func(s int64) bool { return s == seq })
		return false
	}
	if len(c.rest) == 0 {
		c.first = 0
		return true
	}
	next := c.rest[0]
	c.first, c.rest = next, slices.Delete(c.rest, 0, 1)
	return false
}

// answerKey names one call of a run: its call ID and position (0 for an
// output with no call before it).
type answerKey struct {
	callID string
	seq    int64
}

// answered returns the call that an output at seq with call ID callID
// answers: the latest call with its ID placed before it, stored in rc's
// run or in batch (sorted positions of the batch's calls). rc may be nil
// (a run with nothing stored).
func (rc *runCalls) answered(callID string, seq int64, batch []int64) answerKey {
	var stored int64
	if rc != nil {
		stored = rc.calls[callID].before(seq)
	}
	inBatch := int64(0)
	if i, _ := slices.BinarySearch(batch, seq); i > 0 {
		inBatch = batch[i-1]
	}
	return answerKey{callID, max(stored, inBatch)}
}

// at returns the item of run runID stored at seq: a binary search among
// the entries, sorted by (place, seq), after an O(1) answer for a seq past
// the session's last entry, as a turn's new items are. sd may be nil (a
// new session).
func (sd *sessionData) at(runID string, seq int64) (state.Item, bool) {
	if sd == nil {
		return state.Item{}, false
	}
	place, ok := sd.places[runID]
	if !ok {
		return state.Item{}, false
	}
	return sd.atPlace(place, seq)
}

// atPlace is at for the run at place.
func (sd *sessionData) atPlace(place int, seq int64) (state.Item, bool) {
	if n := len(sd.entries); n == 0 || compareEntry(sd.entries[n-1], place, seq) < 0 {
		return state.Item{}, false
	}
	i, found := sd.index(place, seq)
	if !found {
		return state.Item{}, false
	}
	return sd.entries[i].item, true
}

// index returns the index among the entries of the one at (place, seq),
// or where it would be, and whether it is there.
func (sd *sessionData) index(place int, seq int64) (int, bool) {
	return slices.BinarySearchFunc(sd.entries, seq, func(e entry, seq int64) int { return compareEntry(e, place, seq) })
}

func compareEntry(a entry, place int, seq int64) int {
	if c := cmp.Compare(a.place, place); c != 0 {
		return c
	}
	return cmp.Compare(a.item.Seq(), seq)
}

// List returns the session's items in order; limit > 0 returns only the
// last limit items. The items are values that alias nothing in the store.
func (s *Store) List(ctx context.Context, sessionID string, limit int) ([]state.Item, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, session.ErrClosed
	}
	sd := s.sessions[sessionID]
	if sd == nil {
		return nil, nil
	}
	return sd.last(len(sd.entries), limit), nil
}

// last returns the items of the last limit entries before index end (all
// of them for limit <= 0).
func (sd *sessionData) last(end, limit int) []state.Item {
	from := 0
	if limit > 0 && limit < end {
		from = end - limit
	}
	out := make([]state.Item, end-from)
	for i, e := range sd.entries[from:end] {
		out[i] = e.item
	}
	return out
}

// ListBefore returns, in order, the session's items placed before the
// items of run runID, among those written before q.Stamp when it is > 0
// (see [session.Store]); q.Limit > 0 returns only the last Limit of them.
func (s *Store) ListBefore(ctx context.Context, sessionID, runID string, q session.HistoryQuery) (session.History, error) {
	if err := ctx.Err(); err != nil {
		return session.History{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return session.History{}, session.ErrClosed
	}
	sd := s.sessions[sessionID]
	h := session.History{Stamp: s.stamp(sessionID, sd) + 1}
	if sd == nil {
		return h, nil
	}
	end := len(sd.entries)
	if place, ok := sd.places[runID]; ok {
		end, _ = slices.BinarySearchFunc(sd.entries, place, func(e entry, place int) int { return cmp.Compare(e.place, place) })
	}
	if q.Stamp <= 0 {
		h.Items = sd.last(end, q.Limit)
		return h, nil
	}
	for i := end - 1; i >= 0 && (q.Limit <= 0 || len(h.Items) < q.Limit); i-- {
		if e := sd.entries[i]; e.stamp < q.Stamp {
			h.Items = append(h.Items, e.item)
		}
	}
	slices.Reverse(h.Items)
	return h, nil
}

// ReadChanges reads the session's items written at or after q.Since, or
// its last q.Limit items (see [session.ChangeQuery]), with their places
// (a run's place here counts from 1). With Since > 0 it reads the
// session's entries in the order they were written, from the first of
// stamp Since, each found among the entries by its place and position:
// O(k log n) for k items written since, as the databases' index of
// stamps makes their read.
func (s *Store) ReadChanges(ctx context.Context, sessionID string, q session.ChangeQuery) (session.Changes, error) {
	if err := ctx.Err(); err != nil {
		return session.Changes{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return session.Changes{}, session.ErrClosed
	}
	sd := s.sessions[sessionID]
	ch := session.Changes{Stamp: s.stamp(sessionID, sd) + 1, Generation: s.gens[sessionID]}
	if sd == nil {
		return ch, nil
	}
	if place, ok := sd.places[q.RunID]; ok && q.RunID != "" {
		ch.RunPlace = int64(place) + 1
	}
	if q.Since > 0 {
		// The entries written since, found in the order written.
		from, _ := slices.BinarySearchFunc(sd.written, q.Since, func(w writeRef, stamp int64) int { return cmp.Compare(w.stamp, stamp) })
		ch.Items = sd.placedAt(sd.written[from:])
		slices.SortFunc(ch.Items, func(a, b session.Placed) int {
			if c := cmp.Compare(a.Place, b.Place); c != 0 {
				return c
			}
			return cmp.Compare(a.Item.Seq(), b.Item.Seq())
		})
		return ch, nil
	}
	from := 0
	if q.Limit > 0 && q.Limit < len(sd.entries) {
		from = len(sd.entries) - q.Limit
	}
	ch.Items = placedOf(sd.entries[from:])
	return ch, nil
}

// placedAt returns the items of the entries that refs point to, with
// their places (counting from 1), in the refs' order.
func (sd *sessionData) placedAt(refs []writeRef) []session.Placed {
	if len(refs) == 0 {
		return nil
	}
	out := make([]session.Placed, len(refs))
	for j, w := range refs {
		i, _ := sd.index(w.place, w.seq) // every ref's entry is stored
		out[j] = session.Placed{Place: int64(w.place) + 1, Item: sd.entries[i].item}
	}
	return out
}

// placedOf returns the entries' items with their places (counting from
// 1), in one allocation of their length: a full read of a long session
// grows no slice.
func placedOf(entries []entry) []session.Placed {
	if len(entries) == 0 {
		return nil
	}
	out := make([]session.Placed, len(entries))
	for i, e := range entries {
		out[i] = session.Placed{Place: int64(e.place) + 1, Item: e.item}
	}
	return out
}

// Append stores items of run runID, each at its Seq, all or none. An item
// already stored at its (runID, Seq) is skipped; one that differs from the
// stored item fails the whole call with [session.ErrConflict], and an
// output for a call that has one stored at another position (see
// [session.Store]) with [session.ErrDuplicateOutput]. Empty IDs, a
// zero item or a Seq below 1 fail with [session.ErrInvalid]. Appending no
// items stores nothing and does not fix the run's place.
func (s *Store) Append(ctx context.Context, sessionID, runID string, items []state.Item) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if sessionID == "" || runID == "" {
		return fmt.Errorf("memory: append to session %q run %q: empty ID: %w", sessionID, runID, session.ErrInvalid)
	}
	for _, it := range items {
		if it.IsZero() || it.Seq() < 1 {
			return fmt.Errorf("memory: append %s to session %q run %q: %w", it, sessionID, runID, session.ErrInvalid)
		}
	}
	if len(items) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return session.ErrClosed
	}
	sd := s.sessions[sessionID]
	place, placed := 0, false
	switch {
	case sd != nil && sd.lastRun == runID && runID != "":
		place, placed = sd.lastAt, true
	case sd != nil:
		place, placed = sd.places[runID]
	}
	fresh, err := sd.fresh(sessionID, runID, items, placed, place)
	if err != nil {
		return err
	}
	if len(fresh) == 0 {
		return nil
	}
	var rc *runCalls // the run's ledger of calls; nil for a run without a place
	if placed {
		rc = sd.ledger(place)
	}
	var buf [smallBatch]answer
	answers, err := checkOutputs(rc, fresh, buf[:0])
	if err != nil {
		return fmt.Errorf("memory: append to session %q run %q: %w", sessionID, runID, err)
	}
	if sd == nil {
		sd = &sessionData{stamp: s.stamps[sessionID], places: make(map[string]int), runs: make(map[int]string),
			entries: make([]entry, 0, firstEntriesRoom), written: make([]writeRef, 0, firstEntriesRoom)}
		delete(s.stamps, sessionID)
		s.sessions[sessionID] = sd
		s.list(sessionID, sd)
	}
	if !placed {
		place = len(sd.places)
		sd.places[runID] = place
		sd.runs[place] = runID
		rc = sd.addLedger(place)
	}
	for _, a := range answers {
		rc.answers[a.call] = a.output
	}
	sd.lastRun, sd.lastAt = runID, place
	sd.stamp++
	stamp := sd.stamp
	for _, it := range fresh {
		if it.Kind().IsCall() {
			c := rc.calls[it.CallID()]
			c.add(it.Seq())
			rc.calls[it.CallID()] = c
		}
		sd.written = append(sd.written, writeRef{stamp: stamp, place: place, seq: it.Seq()})
		n := len(sd.entries)
		if n == 0 || compareEntry(sd.entries[n-1], place, it.Seq()) < 0 {
			sd.entries = append(sd.entries, entry{place: place, stamp: stamp, item: it})
			continue
		}
		i, _ := sd.index(place, it.Seq())
		sd.entries = slices.Insert(sd.entries, i, entry{place: place, stamp: stamp, item: it})
	}
	return nil
}

// fresh returns the items not stored yet, sorted by position: items
// itself when they are in order, all new and none twice (an append of a
// turn's items), a sorted copy otherwise. An item that differs from the
// one stored, or given, at its position fails with an error wrapping
// [session.ErrConflict]. sd may be nil (a new session); placed says
// whether the run has a place in it, and place is that place, looked up
// once by the caller rather than once per item.
func (sd *sessionData) fresh(sessionID, runID string, items []state.Item, placed bool, place int) ([]state.Item, error) {
	simple := true
	for i, it := range items {
		if i > 0 && it.Seq() <= items[i-1].Seq() {
			simple = false
			break
		}
		if placed { // a run without a place has nothing stored
			if _, ok := sd.atPlace(place, it.Seq()); ok {
				simple = false
				break
			}
		}
	}
	if simple {
		return items, nil
	}
	fresh := make([]state.Item, 0, len(items))
	seen := make(map[int64]state.Item, len(items))
	for _, it := range items {
		prev, ok := seen[it.Seq()]
		if !ok {
			prev, ok = sd.at(runID, it.Seq())
		}
		if ok {
			if !prev.Equal(it) {
				return nil, fmt.Errorf("memory: append %s to session %q run %q: stored %s: %w", it, sessionID, runID, prev, session.ErrConflict)
			}
			continue
		}
		seen[it.Seq()] = it
		fresh = append(fresh, it)
	}
	slices.SortFunc(fresh, func(a, b state.Item) int { return cmp.Compare(a.Seq(), b.Seq()) })
	return fresh, nil
}

// An answer is a call and the position of its output.
type answer struct {
	call   answerKey
	output int64
}

// smallBatch is the number of items up to which checkOutputs scans the
// batch instead of indexing it: a turn's append allocates nothing there.
const smallBatch = 16

// checkOutputs appends to answers the calls that the outputs among fresh
// (new items of the run whose ledger is rc, nil for none, sorted by
// position) answer, with the outputs' positions, and returns it, or an
// error wrapping [session.ErrDuplicateOutput] if one of those calls has an
// output at another position already. A batch of up to smallBatch items
// is scanned; a larger one is indexed: it costs O(len(fresh) log n).
func checkOutputs(rc *runCalls, fresh []state.Item, answers []answer) ([]answer, error) {
	var (
		batch   map[string][]int64  // the batch's calls by call ID, sorted, in a large batch
		indexed map[answerKey]int64 // answers, in a large batch
	)
	if len(fresh) > smallBatch {
		batch, indexed = make(map[string][]int64), make(map[answerKey]int64)
		for _, it := range fresh {
			if it.Kind().IsCall() {
				batch[it.CallID()] = append(batch[it.CallID()], it.Seq())
			}
		}
	}
	for i, it := range fresh {
		if !it.Kind().IsOutput() {
			continue
		}
		id := it.CallID()
		var a answerKey
		if batch != nil {
			a = rc.answered(id, it.Seq(), batch[id])
		} else {
			a = rc.answered(id, it.Seq(), nil)
			for j := i - 1; j >= 0; j-- { // the latest call with its ID before it in the batch
				if c := fresh[j]; c.Kind().IsCall() && c.CallID() == id {
					a.seq = max(a.seq, c.Seq())
					break
				}
			}
		}
		prev, ok := int64(0), false
		if indexed != nil {
			prev, ok = indexed[a]
		} else {
			for _, b := range answers {
				if b.call == a {
					prev, ok = b.output, true
				}
			}
		}
		if !ok && rc != nil {
			prev, ok = rc.answers[a]
		}
		if ok && prev != it.Seq() {
			return nil, fmt.Errorf("%s: the call at position %d already has its output at position %d: %w",
				it, a.seq, prev, session.ErrDuplicateOutput)
		}
		if indexed != nil {
			indexed[a] = it.Seq()
		}
		answers = append(answers, answer{a, it.Seq()})
	}
	return answers, nil
}

// stamp returns the last write stamp of session sessionID, whose data is
// sd (nil for none).
func (s *Store) stamp(sessionID string, sd *sessionData) int64 {
	if sd != nil {
		return sd.stamp
	}
	return s.stamps[sessionID]
}

// Lookup returns the item stored at (runID, seq), if any.
func (s *Store) Lookup(ctx context.Context, sessionID, runID string, seq int64) (state.Item, bool, error) {
	if err := ctx.Err(); err != nil {
		return state.Item{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return state.Item{}, false, session.ErrClosed
	}
	sd := s.sessions[sessionID]
	if sd == nil {
		return state.Item{}, false, nil
	}
	it, ok := sd.at(runID, seq)
	return it, ok, nil
}

// Pop removes and returns the session's last item, if any. The run keeps
// its place: items it appends later still sort by it.
func (s *Store) Pop(ctx context.Context, sessionID string) (state.Item, bool, error) {
	if err := ctx.Err(); err != nil {
		return state.Item{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return state.Item{}, false, session.ErrClosed
	}
	sd := s.sessions[sessionID]
	if sd == nil || len(sd.entries) == 0 {
		return state.Item{}, false, nil
	}
	last := sd.entries[len(sd.entries)-1]
	sd.entries = sd.entries[:len(sd.entries)-1]
	sd.unwrite(last)
	s.gens[sessionID]++
	sd.ledger(last.place).forget(last.item)
	return last.item, true, nil
}

// unwrite removes popped entry e from the entries in the order written:
// among those of its stamp, found by binary search.
func (sd *sessionData) unwrite(e entry) {
	i, _ := slices.BinarySearchFunc(sd.written, e.stamp, func(w writeRef, stamp int64) int { return cmp.Compare(w.stamp, stamp) })
	for ; i < len(sd.written) && sd.written[i].stamp == e.stamp; i++ {
		if w := sd.written[i]; w.place == e.place && w.seq == e.item.Seq() {
			sd.written = slices.Delete(sd.written, i, i+1)
			return
		}
	}
}

// forget removes a popped call or output from its run's ledger of calls.
func (rc *runCalls) forget(it state.Item) {
	id := it.CallID()
	switch {
	case it.Kind().IsCall():
		if c := rc.calls[id]; c.remove(it.Seq()) {
			delete(rc.calls, id)
		} else {
			rc.calls[id] = c
		}
	case it.Kind().IsOutput():
		if a := rc.answered(id, it.Seq(), nil); rc.answers[a] == it.Seq() {
			delete(rc.answers, a)
		}
	}
}

// Clear removes every item of the session, and the places of its runs.
// The session's write stamps go on from where they were.
func (s *Store) Clear(ctx context.Context, sessionID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return session.ErrClosed
	}
	s.gens[sessionID]++
	if sd := s.sessions[sessionID]; sd != nil {
		s.stamps[sessionID] = sd.stamp
		s.unlist(sessionID, sd)
		delete(s.sessions, sessionID)
	}
	return nil
}

// Close drops every session; later calls return [session.ErrClosed].
// Closing twice is not an error.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.sessions, s.newest, s.ids, s.bySerial, s.stamps, s.gens = nil, nil, nil, nil, nil, nil
	return nil
}
