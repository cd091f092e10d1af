package state

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
)

// Usage totals the model usage of a run. InputTokens counts every input
// token; CachedTokens are those of them read from the provider's prompt
// cache and CacheWriteTokens those written to it (Anthropic's
// cache_creation_input_tokens; providers that cache implicitly, as OpenAI
// and Gemini do, report none). A checkpoint leaves CacheWriteTokens out
// when it is zero, so that runs without cache writes keep the format
// earlier versions read.
type Usage struct {
	Requests         int64 `json:"requests"`
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	ReasoningTokens  int64 `json:"reasoning_tokens"`
	CachedTokens     int64 `json:"cached_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
}

// Add adds o to u.
func (u *Usage) Add(o Usage) {
	u.Requests += o.Requests
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.ReasoningTokens += o.ReasoningTokens
	u.CachedTokens += o.CachedTokens
	u.CacheWriteTokens += o.CacheWriteTokens
}

// A Boundary locates the current model response in a run by position, never
// by identity: its items hold positions [Start, End) and the outputs of its
// calls are reserved the positions [End, OutputsEnd), in call order.
// The zero Boundary means no response yet.
type Boundary struct {
	Start      int64 `json:"start"`
	End        int64 `json:"end"`
	OutputsEnd int64 `json:"outputs_end"`
}

// Contains reports whether position seq belongs to the response or its
// outputs.
func (b Boundary) Contains(seq int64) bool { return seq >= b.Start && seq < b.OutputsEnd }

// A Run is the state of one agent run: its items with their positions, the
// current agent and turn, usage, pending approvals and decisions, guardrail
// results and the bookkeeping that persistence and tracing keep across a
// pause. It is what a checkpoint stores and what pipeline.Runner.Resume continues.
//
// A Run is safe for concurrent use: the tool calls of one response may
// record results at the same time. Accessors return copies or immutable
// views; nothing a caller holds aliases the Run, and two Runs made with
// [Run.Clone] share nothing mutable.
type Run struct {
	mu sync.Mutex

	id       string
	agent    string
	turn     int
	maxTurns int
	version  int64

	input   []Item // the run's original input, as placed
	items   []Item // this run's items in Seq order; append-only (see insert)
	nextSeq int64  // the next free position; positions start at 1
	resp    Boundary

	// The model's context before this run's own items: the session history
	// the run started from, or a handoff input filter's result. Items from
	// index ctxFrom of items follow it.
	context []Item
	ctxFrom int
	// ctxRef: the context is the session's history, which checkpoints
	// refer to instead of copying (history.go); ctxPending: the run came
	// from a store's pieces and the context is not read yet; ctxStamp:
	// the session's write stamp the history was read at (0: none).
	ctxRef     bool
	ctxStamp   int64
	ctxPending *historyRef

	// completed indexes the outputs of the run's items, call ID →
	// position of its latest output; it is built on the first question
	// (completedLocked) and kept from then on, so that a run nobody
	// asks (the Runner's turn asks by position) writes no map per output.
	// nil: not built.
	completed map[string]int64
	pending   []Approval
	decisions []Decision
	guards    []GuardrailResult
	calls     []ModelCall
	usage     Usage

	sessionID string
	watermark int64
	trace     map[string]string

	final     string
	finished  bool
	extension map[string]json.RawMessage

	// What a store last saved of the run (delta.go): its baseline, the
	// positions recorded since the last delta was taken, in record order,
	// and the generation of the context, bumped whenever it is replaced.
	// The journal is kept once a delta was taken (journaling): a run never
	// saved keeps none.
	base       baseline
	journal    []int64
	journaling bool
	ctxGen     int
}

// NewRun returns an empty run with the given ID, starting with the named
// agent, for pipeline.WithState. Its turn limit is the runner's
// (pipeline.WithMaxTurns) unless the run is given its own
// (pipeline.WithRunMaxTurns), which its checkpoints keep.
func NewRun(id, agent string) *Run {
	return &Run{id: id, agent: agent, nextSeq: 1}
}

// ID returns the run ID.
func (r *Run) ID() string { return r.id }

// Agent returns the name of the current agent.
func (r *Run) Agent() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.agent
}

// setAgent makes the named agent current (after a handoff).
func (r *Run) setAgent(name string) {
	r.mu.Lock()
	r.agent = name
	r.mu.Unlock()
}

// Turn returns the number of turns started so far.
func (r *Run) Turn() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.turn
}

// nextTurn starts the turn after the run's last, unless that would pass
// limit: it returns the turn's number and whether it started.
func (r *Run) nextTurn(limit int) (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.turn+1 > limit {
		return r.turn + 1, false
	}
	r.turn++
	return r.turn, true
}

// setTurn records that turn n has started.
func (r *Run) setTurn(n int) {
	r.mu.Lock()
	r.turn = n
	r.mu.Unlock()
}

// MaxTurns returns the run's turn limit, or 0 for the runner's default.
func (r *Run) MaxTurns() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.maxTurns
}

// setMaxTurns sets the run's turn limit.
func (r *Run) setMaxTurns(n int) {
	r.mu.Lock()
	r.maxTurns = n
	r.mu.Unlock()
}

// Version returns the checkpoint version a [Store] last saved or loaded.
func (r *Run) Version() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.version
}

// setVersion records the checkpoint version (runcore.SetVersion).
func (r *Run) setVersion(v int64) {
	r.mu.Lock()
	r.version = v
	r.mu.Unlock()
}

// Input returns a copy of the run's original input items.
func (r *Run) Input() []Item {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.input)
}

// Items returns a view of the run's own items in Seq order. It is O(1) and
// detached: items recorded later are not in it.
func (r *Run) Items() Items {
	r.mu.Lock()
	defer r.mu.Unlock()
	return ItemsOf(r.items)
}

// Len returns the number of the run's own items.
func (r *Run) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.items)
}

// ModelInput returns the view the model sees: the context the run started
// from (session history, or a handoff filter's result) followed by the run's
// items since. It is O(1).
func (r *Run) ModelInput() Items {
	r.mu.Lock()
	defer r.mu.Unlock()
	return concat(r.context, r.items[r.ctxFrom:])
}

// modelInputAnd returns the model input, as ModelInput does, and the
// extension under key, as Extension does, under one lock: the core reads
// a turn's input and the run's view (pipeline's ViewKey) together.
func (r *Run) modelInputAnd(key string) (Items, json.RawMessage, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	in := concat(r.context, r.items[r.ctxFrom:])
	v, ok := r.extension[key]
	if !ok {
		return in, nil, false
	}
	return in, slices.Clone(v), true
}

// setHistory sets the context the run's items follow (runcore.SetHistory).
func (r *Run) setHistory(items []Item) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.setHistoryLocked(items, false)
}

// setHistoryLocked makes items the context the run's items follow: a copy
// of them, or with owned the items themselves, capped at their length
// (the caller gives them up: nothing writes into a context in place).
func (r *Run) setHistoryLocked(items []Item, owned bool) error {
	if r.resp != (Boundary{}) {
		return wrapf(ErrContextSeen, "state: run %s: set history after the response at positions [%d, %d)", r.id, r.resp.Start, r.resp.End)
	}
	if owned {
		r.context = items[:len(items):len(items)]
	} else {
		r.context = slices.Clone(items)
	}
	r.ctxFrom = 0
	r.ctxRef, r.ctxStamp, r.ctxPending = false, 0, nil
	r.ctxGen++
	return nil
}

// replaceContext makes items the whole model context from now on: the next
// model calls see items followed by the run's items recorded after this
// call. Handoff input filters use it. The run's own items are unchanged.
func (r *Run) replaceContext(items []Item) {
	r.mu.Lock()
	r.context = slices.Clone(items)
	r.ctxFrom = len(r.items)
	r.ctxRef, r.ctxStamp, r.ctxPending = false, 0, nil
	r.ctxGen++
	r.mu.Unlock()
}

// History returns a copy of the context the run's items follow.
func (r *Run) History() []Item {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.context)
}

// NextSeq returns the next free position.
func (r *Run) NextSeq() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.nextSeq
}

// place places a model response: its items, which have no positions yet,
// at the next positions in order, then one reserved position per call
// (calls of them) for its output; the response boundary spans both. It is
// the one way a response enters a run, under one lock, so no reader sees
// the items without their boundary. items are changed in place to carry
// their positions; positions they had are replaced.
func (r *Run) place(items []Item, calls int) (Boundary, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.placeLocked(items, calls)
}

func (r *Run) placeLocked(items []Item, calls int) (Boundary, error) {
	for i, it := range items {
		if !it.kind.Valid() {
			return Boundary{}, fmt.Errorf("state: place response: item %d of %d has no valid kind", i+1, len(items))
		}
	}
	first := r.nextSeq
	for i := range items {
		items[i] = items[i].WithSeq(first + int64(i))
	}
	end := first + int64(len(items))
	r.nextSeq = end + int64(calls)
	for _, it := range items {
		_ = r.recordLocked(it) // fresh positions past the last item: it appends
	}
	r.resp = Boundary{Start: first, End: end, OutputsEnd: end + int64(calls)}
	return r.resp, nil
}

// placeModelResponse is place, with the model call that made the
// response and its usage recorded under the same lock: the usage even if
// placing fails, the call (at the position of the response's first item,
// 0 if it has none) once it is placed. It is the core's one lock per
// model response.
func (r *Run) placeModelResponse(items []Item, calls int, u Usage, c ModelCall) (Boundary, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.usage.Add(u)
	b, err := r.placeLocked(items, calls)
	if err != nil {
		return b, err
	}
	if len(items) > 0 {
		c.Seq = b.Start
	}
	r.calls = append(withCallRoom(r.calls), c)
	return b, nil
}

// A run's items and model calls grow by a few each turn: a list that has
// none yet starts with room for this many, rather than growing through
// lengths 1, 2, 4 and 8, each a new array and a copy (a fifth of the
// allocations of a run of 10 tool turns, and as many write barriers).
// They are size classes of the allocator (1 408 and 448 bytes), so the
// room costs no rounding up.
//
// A run that outgrows its first firstCallsRoom model calls is a run of
// tool turns, which goes on for more: its calls then grow to
// nextCallsRoom at once (1 792 bytes, a size class too) rather than
// through 8, one array and one copy of every call fewer for any run of
// more than 8 model calls (a run of 10 tool turns makes 11).
const (
	firstItemsRoom = 16
	firstCallsRoom = 4
	nextCallsRoom  = 16
)

// withCallRoom returns calls with room for one more model call: room for
// firstCallsRoom when it has no array yet, then nextCallsRoom, then as
// withRoom grows it.
func withCallRoom(calls []ModelCall) []ModelCall {
	if len(calls) == firstCallsRoom && cap(calls) == firstCallsRoom {
		return append(make([]ModelCall, 0, nextCallsRoom), calls...)
	}
	return withRoom(calls, 1, firstCallsRoom)
}

// withRoom returns s with room for n more elements: a list with no array
// yet gets one of room for least, and a full one a new array of at least
// twice its capacity (rounded up to the allocator's size class), whatever
// its length.
//
// append doubles a slice only up to 256 elements and then grows it by
// about 1.25×, so that a list of N items has been copied through arrays
// of 5N to 6N elements in all, against 2N to 4N when doubling: the items'
// arrays of a run of 500 tool turns (1 000 items of 88 bytes) cost 586
// bytes a turn, 381 when doubling, those of a run of 64 turns 351 either
// way (issue 28). A run's lists are only ever appended to, a few elements
// a turn, so the room doubling leaves (at most the list's length) is soon
// used.
func withRoom[E any](s []E, n, least int) []E {
	if cap(s)-len(s) >= n {
		return s
	}
	if cap(s) == 0 {
		return make([]E, 0, max(n, least))
	}
	// Appended to no array, append takes the length asked for as the
	// capacity (rounded up to the size class), without its own growth.
	grown := append([]E(nil), make([]E, max(len(s)+n, 2*cap(s)))...)
	return append(grown[:0], s...)
}

// reserve reserves n consecutive positions and returns the first.
func (r *Run) reserve(n int) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	first := r.nextSeq
	r.nextSeq += int64(n)
	return first
}

// addInput places the items at the next positions, records them as the
// run's input and returns the placed copies.
func (r *Run) addInput(items ...Item) []Item {
	r.mu.Lock()
	defer r.mu.Unlock()
	placed := make([]Item, len(items))
	for i, it := range items {
		placed[i] = it.WithSeq(r.nextSeq)
		r.nextSeq++
		r.journalLocked(placed[i].seq)
	}
	r.items = append(withRoom(r.items, len(placed), firstItemsRoom), placed...)
	if len(r.input) == 0 {
		// The run's first input is the run's last items: the list shares
		// their array, whose elements never change (items are appended,
		// or inserted into a copy), capped so that an append copies.
		n := len(r.items)
		r.input = r.items[n-len(placed) : n : n]
	} else {
		r.input = append(r.input, placed...)
	}
	return placed
}

// record adds items that already have positions. Positions must be unique,
// reserved (below [Run.NextSeq]) and, within one call, increasing. An item
// placed after the run's last item is appended in O(1); one placed before it
// (an output decided on resume) is inserted into a copy of the history, so
// views taken earlier stay as they were.
func (r *Run) record(items ...Item) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, it := range items {
		if err := r.recordLocked(it); err != nil {
			return err
		}
	}
	return nil
}

// recordOutput records output it as record does, unless its position
// already holds an output of its call (it was decided before), and
// resolves the call's pending approval; it reports whether it recorded
// it. It is the core's one lock per tool output.
func (r *Run) recordOutput(it Item) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if x, ok := r.itemAtLocked(it.seq); ok && x.kind.IsOutput() && x.callID == it.callID {
		return false, nil
	}
	if err := r.recordLocked(it); err != nil {
		return false, err
	}
	r.pending = withoutPending(r.pending, func(a Approval) bool { return a.CallID == it.callID })
	return true, nil
}

func (r *Run) recordLocked(it Item) error {
	if !it.kind.Valid() {
		return fmt.Errorf("state: record item at seq %d: invalid kind", it.seq)
	}
	if it.seq <= 0 || it.seq >= r.nextSeq {
		return fmt.Errorf("state: record %s: position %d is not reserved (next is %d)", it, it.seq, r.nextSeq)
	}
	n := len(r.items)
	if n == 0 || r.items[n-1].seq < it.seq {
		r.items = append(withRoom(r.items, 1, firstItemsRoom), it)
	} else {
		i, found := slices.BinarySearchFunc(r.items, it.seq, func(x Item, s int64) int { return cmp.Compare(x.seq, s) })
		if found {
			return fmt.Errorf("state: record %s: position %d is taken by %s", it, it.seq, r.items[i])
		}
		fresh := make([]Item, 0, n+1)
		fresh = append(fresh, r.items[:i]...)
		fresh = append(fresh, it)
		r.items = append(fresh, r.items[i:]...)
		if i < r.ctxFrom {
			r.ctxFrom++
		}
	}
	r.journalLocked(it.seq)
	if it.kind.IsOutput() && r.completed != nil {
		r.noteCompletedLocked(it)
	}
	return nil
}

// completedLocked returns the index of the run's outputs (see
// Run.completed), built from the items on the first call.
func (r *Run) completedLocked() map[string]int64 {
	if r.completed == nil {
		r.completed = make(map[string]int64)
		for _, it := range r.items {
			if it.kind.IsOutput() {
				r.noteCompletedLocked(it)
			}
		}
	}
	return r.completed
}

// noteCompletedLocked adds output it to the built index: a call ID's
// latest output (the highest position) stays, whatever order outputs were
// recorded in, as a build from the items in order would have it.
func (r *Run) noteCompletedLocked(it Item) {
	if seq, ok := r.completed[it.callID]; !ok || seq < it.seq {
		r.completed[it.callID] = it.seq
	}
}

// ItemAt returns the item at position seq.
func (r *Run) ItemAt(seq int64) (Item, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.itemAtLocked(seq)
}

// Completed reports whether a call with this ID has an output in the run,
// and where (the latest, if a model reused the call ID in a later
// response). It is the run's ledger of completed calls; to ask about one
// call item, use [Run.Answered].
func (r *Run) Completed(callID string) (seq int64, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seq, ok = r.completedLocked()[callID]
	return seq, ok
}

// Answered returns the output of the call item call: the first output with
// its call ID placed after it. Unlike [Run.Completed] it is exact when a
// model reuses call IDs across responses: an earlier call's output does
// not answer a later call. It scans only the items after the call.
func (r *Run) Answered(call Item) (Item, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.completedLocked()[call.callID]; !ok {
		return Item{}, false
	}
	i, _ := slices.BinarySearchFunc(r.items, call.seq, func(x Item, s int64) int { return cmp.Compare(x.seq, s) })
	for _, it := range r.items[i:] {
		if it.kind.IsOutput() && it.callID == call.callID && it.seq > call.seq {
			return it, true
		}
	}
	return Item{}, false
}

// Response returns the boundary of the current model response.
func (r *Run) Response() Boundary {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.resp
}

// setResponse records the boundary of the current model response.
func (r *Run) setResponse(b Boundary) {
	r.mu.Lock()
	r.resp = b
	r.mu.Unlock()
}

// Usage returns the run's usage totals.
func (r *Run) Usage() Usage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.usage
}

// addUsage adds u to the run's usage totals.
func (r *Run) addUsage(u Usage) {
	r.mu.Lock()
	r.usage.Add(u)
	r.mu.Unlock()
}

// SessionID returns the ID of the session the run persists to, if any.
func (r *Run) SessionID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sessionID
}

// setSessionID records the session the run persists to
// (runcore.SetSessionID).
func (r *Run) setSessionID(id string) {
	r.mu.Lock()
	r.sessionID = id
	r.mu.Unlock()
}

// SessionWatermark returns the persistence middleware's record of what the
// session already holds: every position at or below it is stored.
func (r *Run) SessionWatermark() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.watermark
}

// setSessionWatermark records that every position at or below w is stored
// in the session (runcore.SetSessionWatermark).
func (r *Run) setSessionWatermark(w int64) {
	r.mu.Lock()
	r.watermark = w
	r.mu.Unlock()
}

// TraceContext returns a copy of the trace context saved for a resumed run
// to link to (a W3C trace-context carrier), or nil.
func (r *Run) TraceContext() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.trace)
}

// SetTraceContext saves a copy of the trace context carrier.
func (r *Run) SetTraceContext(carrier map[string]string) {
	r.mu.Lock()
	r.trace = maps.Clone(carrier)
	r.mu.Unlock()
}

// FinalOutput returns the run's final output and whether the run finished.
func (r *Run) FinalOutput() (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.final, r.finished
}

// finish records the run's final output.
func (r *Run) finish(output string) {
	r.mu.Lock()
	r.final, r.finished = output, true
	r.mu.Unlock()
}

// unfinish takes back a finish whose turn did not commit.
func (r *Run) unfinish() {
	r.mu.Lock()
	r.final, r.finished = "", false
	r.mu.Unlock()
}

// Extension returns a copy of the JSON a middleware stored under key, so
// that middleware outside this module can keep state in a checkpoint.
func (r *Run) Extension(key string) (json.RawMessage, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.extension[key]
	return slices.Clone(v), ok
}

// SetExtension stores a copy of v under key; a nil v deletes the key.
// Keys that begin with "turnkit." are reserved for turnkit's own records.
func (r *Run) SetExtension(key string, v json.RawMessage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v == nil {
		delete(r.extension, key)
		return
	}
	if r.extension == nil {
		r.extension = make(map[string]json.RawMessage)
	}
	r.extension[key] = slices.Clone(v)
}

// Clone returns a deep copy of r that shares nothing mutable with it.
// Deciding an approval on the clone leaves r as it was.
//
// The lists that are never changed in place (input, items, context,
// model calls and pending approvals: each is only appended to past its
// length or replaced by a new one) are shared, capped at their length, so
// that an append on either run makes that run a new array and the other
// never sees it; the rest is copied.
func (r *Run) Clone() *Run {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := &Run{
		id: r.id, agent: r.agent, turn: r.turn, maxTurns: r.maxTurns, version: r.version,
		input:      slices.Clip(r.input),
		items:      slices.Clip(r.items),
		nextSeq:    r.nextSeq,
		resp:       r.resp,
		context:    slices.Clip(r.context),
		ctxFrom:    r.ctxFrom,
		ctxRef:     r.ctxRef,
		ctxStamp:   r.ctxStamp,
		ctxPending: r.ctxPending, // immutable once set
		completed:  maps.Clone(r.completed),
		pending:    slices.Clip(r.pending),
		decisions:  slices.Clone(r.decisions),
		guards:     cloneGuards(r.guards),
		calls:      slices.Clip(r.calls),
		usage:      r.usage,
		sessionID:  r.sessionID,
		watermark:  r.watermark,
		trace:      maps.Clone(r.trace),
		final:      r.final,
		finished:   r.finished,
		base:       r.base,
		journal:    slices.Clone(r.journal),
		journaling: r.journaling,
		ctxGen:     r.ctxGen,
	}
	if r.extension != nil {
		c.extension = make(map[string]json.RawMessage, len(r.extension))
		for k, v := range r.extension {
			c.extension[k] = slices.Clone(v)
		}
	}
	return c
}

// journalLocked notes that position seq was recorded, for the next
// [Run.Delta], once a store saves the run.
func (r *Run) journalLocked(seq int64) {
	if r.journaling {
		r.journal = append(r.journal, seq)
	}
}
