package persistence

import (
	"context"
	"sort"
	"sync"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// status says what the session holds at a position.
type status uint8

const (
	unsettled status = iota // not stored (yet)
	stored                  // stored in the session
	dropped                 // never to be stored: discarded model output
)

// A ledger tracks, for one turn, what the session holds at each position,
// and makes the turn's appends. The tool calls of a response commit
// concurrently; the mutex orders their appends, so a call's earlier items
// are stored with it or before it, never after.
//
// A run served through the middleware's run stage has one ledger for all
// its turns, made when the run starts and carried by the run's context
// (see [runHandler.serveRun]); each turn resets it ([ledger.reset]) and
// releases it when it returns. A turn served without it (the turn stage
// composed alone) gets a ledger of its own.
type ledger struct {
	mu   sync.Mutex
	h    *handler // the middleware, whose store the ledger appends to
	run  *state.Run
	turn *pipeline.Turn
	sid  string
	base int64    // positions below base were settled when the turn began
	st   []status // st[seq-base]
	ext  extState
	err  error               // the turn's first append failure; later commits wait for resume
	hold *pipeline.InputHold // the first turn's input, held for an input guardrail's ruling

	// Room for what a turn of one call needs, allocated with the ledger:
	// st's first positions, and the batch of each append, which l.mu or
	// the turn's order keeps to one at a time (a store keeps no batch it
	// was given: see [session.Store]). h is a pointer where the store's
	// interface value took two: the ledger fits 384 bytes, not 416
	// (TestLedgerSize).
	stBuf    [8]status
	batchBuf [2]state.Item

	// The context the turn, or with a ledger per run the run, is served
	// with (see withLedger). A run's context is made once, when the run
	// starts, and never changed: a context handed out stays what it was.
	ctx ledgerContext
}

// newLedger returns the ledger of turn t of run, for session sid.
func newLedger(h *handler, run *state.Run, t *pipeline.Turn, sid string, ext extState) *ledger {
	l := &ledger{h: h, run: run, sid: sid}
	l.st = l.stBuf[:0]
	l.reset(t, ext)
	return l
}

// reset readies l for turn t of its run, with the run's persistence
// state ext: nothing of an earlier turn is left but the room it grew.
func (l *ledger) reset(t *pipeline.Turn, ext extState) {
	l.turn = t
	l.base = l.run.SessionWatermark() + 1
	l.st = l.st[:0]
	l.ext = ext
	l.err = nil
	l.hold = nil
}

// runLedger returns the ledger that ctx carries for run and session sid,
// if it carries one for the whole run that no turn holds: the turn about
// to be served then takes it (reset, and released with release) instead
// of making one.
func runLedger(ctx context.Context, run *state.Run, sid string) (*ledger, bool) {
	l, ok := ctx.Value(ledgerKey{}).(*ledger)
	if !ok || l.run != run || l.sid != sid || l.turn != nil {
		return nil, false
	}
	return l, true
}

// release ends the turn's hold on l: the run's next turn may take it. The
// batch given to the store and the positions' room are kept for it.
func (l *ledger) release() {
	l.mu.Lock()
	l.turn, l.hold = nil, nil
	l.mu.Unlock()
}

type ledgerKey struct{}

// A ledgerContext is a turn's context that carries the turn's ledger, as
// context.WithValue(ctx, ledgerKey{}, l) would; it lives in the ledger, so
// the two cost one allocation per turn, not two.
type ledgerContext struct {
	context.Context
	l *ledger
}

// Value returns the ledger for ledgerKey{}, and what the parent context
// holds for any other key.
func (c *ledgerContext) Value(key any) any {
	if key == (ledgerKey{}) {
		return c.l
	}
	return c.Context.Value(key)
}

// withLedger returns ctx carrying l, for the stages inside the turn.
func (l *ledger) withLedger(ctx context.Context) context.Context {
	l.ctx = ledgerContext{Context: ctx, l: l}
	return &l.ctx
}

// ledgerFrom returns the ledger of the turn the tool call belongs to.
func ledgerFrom(ctx context.Context, c *pipeline.ToolCall) (*ledger, bool) {
	l, ok := ctx.Value(ledgerKey{}).(*ledger)
	if !ok || l.turn != c.Turn {
		return nil, false
	}
	return l, true
}

func (l *ledger) status(seq int64) status {
	i := seq - l.base
	switch {
	case i < 0:
		return stored
	case i >= int64(len(l.st)):
		return unsettled
	}
	return l.st[i]
}

func (l *ledger) mark(seq int64, s status) {
	i := seq - l.base
	if i < 0 {
		return
	}
	for int64(len(l.st)) <= i {
		l.st = append(l.st, unsettled)
	}
	l.st[i] = s
}

// append stores items in one atomic, idempotent append and moves the
// watermark. After the turn's first failure it appends nothing more and
// returns that failure: resume appends what is missing.
func (l *ledger) append(ctx context.Context, items []state.Item) error {
	if l.err != nil || len(items) == 0 {
		return l.err
	}
	if err := l.h.store.Append(ctx, l.sid, l.run.ID(), items); err != nil {
		l.err = &AppendError{SessionID: l.sid, RunID: l.run.ID(), Seq: items[0].Seq(), Err: err}
		return l.err
	}
	for _, it := range items {
		l.mark(it.Seq(), stored)
	}
	return l.advance()
}

// advance moves the session watermark over the positions settled since.
func (l *ledger) advance() error {
	wm := l.run.SessionWatermark()
	next := l.run.NextSeq()
	w := wm
	for w+1 < next && l.status(w+1) != unsettled {
		w++
	}
	if w == wm {
		return nil
	}
	runcore.SetSessionWatermark(l.run, w)
	if !l.ext.empty() && l.ext.prune(w) {
		return saveExt(l.run, &l.ext)
	}
	return nil
}

// collect returns the run's items above the watermark and below upTo that
// the session does not hold and may hold now: a call only with its
// outcome, a withheld output as its placeholder, reasoning only with an
// item that follows it, and nothing dropped.
func (l *ledger) collect(upTo int64) []state.Item {
	wm := l.run.SessionWatermark()
	if wm+1 >= upTo {
		return nil
	}
	view := l.run.Items()
	n := view.Len()
	i := sort.Search(n, func(i int) bool { return view.At(i).Seq() > wm })
	out := l.batchBuf[:0] // given only to l.append, which is done with it when it returns
	for ; i < n; i++ {
		it := view.At(i)
		seq := it.Seq()
		if seq >= upTo {
			break
		}
		if l.status(seq) != unsettled {
			continue
		}
		switch {
		case l.ext.excluded(seq):
			l.mark(seq, dropped)
			continue
		case l.ext.withheld(seq):
			it = withheld(it)
		case it.Kind().IsCall():
			if _, done := l.run.Answered(it); !done {
				continue // a call is stored only with its outcome
			}
		}
		out = append(out, it)
	}
	// Reasoning goes with the first stored item that follows it.
	for len(out) > 0 && out[len(out)-1].Kind() == state.KindReasoning {
		out = out[:len(out)-1]
	}
	return out
}

// commitCall stores a call that returned, with its output and the earlier
// items of its response that are not held back.
func (l *ledger) commitCall(ctx context.Context, c *pipeline.ToolCall, res *pipeline.ToolResult) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := c.Turn
	held := t.MayEndRun()
	batch := l.batchBuf[:0] // l.mu is held until the append returned
	for _, it := range t.Response.Items {
		if it.Seq() >= c.Item.Seq() {
			break
		}
		switch {
		case l.status(it.Seq()) != unsettled:
		case it.Kind().IsCall(): // stored with its own outcome
		case held && it.Kind() == state.KindAssistantMessage: // waits for the verdict
		default:
			batch = append(batch, it)
		}
	}
	batch = append(batch, c.Item, c.ResultItem(res))
	_ = l.append(ctx, batch) // a failure is kept in l.err and reported when the turn ends
}

// settleHeld settles the held model output of a turn that will never get
// a passing verdict: its messages are dropped, a terminal call's output is
// withheld (the pair is stored with [WithheldOutput], so the session shows
// that the tool ran), and reasoning that preceded only dropped items is
// dropped with them. The decision is written into the run's state before
// any append, so a resume after a failed append honours it.
func (l *ledger) settleHeld(t *pipeline.Turn) error {
	if t.Response == nil || !t.MayEndRun() {
		return nil
	}
	changed := false
	for _, c := range t.Calls {
		if _, done := l.run.Answered(c.Item); done && c.Terminal && l.status(c.OutputSeq) == unsettled && !l.ext.withheld(c.OutputSeq) {
			l.ext.Withheld = append(l.ext.Withheld, c.OutputSeq)
			changed = true
		}
	}
	later := false // an item after this one in the response is or will be stored
	for i := len(t.Response.Items) - 1; i >= 0; i-- {
		it := t.Response.Items[i]
		st := l.status(it.Seq())
		switch {
		case st == stored, it.Kind().IsCall():
			later = true
		case st == dropped:
		case it.Kind() == state.KindAssistantMessage, it.Kind() == state.KindReasoning && !later:
			l.mark(it.Seq(), dropped)
			l.ext.Excluded = append(l.ext.Excluded, it.Seq())
			changed = true
		default:
			later = true
		}
	}
	if !changed {
		return nil
	}
	return saveExt(l.run, &l.ext)
}

// openCalls reports whether a call of the turn's response has no outcome:
// the turn stopped before its tools finished, and resume will run them.
func (l *ledger) openCalls(t *pipeline.Turn) bool {
	for _, it := range t.Response.Items {
		if it.Kind().IsCall() {
			if _, done := l.run.Answered(it); !done {
				return true
			}
		}
	}
	return false
}

// withheld returns the placeholder stored instead of a terminal tool's
// output after a rejection.
func withheld(out state.Item) state.Item {
	if out.Kind() == state.KindCustomOutput {
		return state.CustomOutput(out.CallID(), out.Name(), WithheldOutput).WithSeq(out.Seq())
	}
	it, _ := state.ToolOutput(out.CallID(), out.Name(), WithheldOutput).WithKind(out.Kind())
	return it.WithSeq(out.Seq())
}

// settleInput stores the run's input, held on its first turn for an input
// guardrail's ruling ([pipeline.InputHold]), once: as it is if it was not
// withheld, else the ruling's replacement at the input's positions (or
// nothing). A withheld input's positions are excluded in the run's state
// before any append, so no later append, and no resume, stores the
// original, even after a failed append.
func (l *ledger) settleInput(ctx context.Context, t *pipeline.Turn) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	hold := l.hold
	if hold == nil {
		return nil
	}
	l.hold = nil
	stored, withheld := hold.Ruling()
	if !withheld {
		return l.append(ctx, l.collect(t.Input[len(t.Input)-1].Seq()+1))
	}
	for _, it := range t.Input {
		l.ext.Excluded = append(l.ext.Excluded, it.Seq())
	}
	if err := saveExt(l.run, &l.ext); err != nil {
		return err
	}
	batch := make([]state.Item, 0, len(stored))
	for i, it := range t.Input {
		if i < len(stored) {
			batch = append(batch, stored[i].WithSeq(it.Seq()))
		} else {
			l.mark(it.Seq(), dropped)
		}
	}
	if len(batch) == 0 {
		return l.advance()
	}
	return l.append(ctx, batch)
}
