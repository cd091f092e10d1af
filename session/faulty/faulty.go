package faulty

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// ErrInjected is the cause of every injected failure. It is wrapped by
// [*InjectedError].
var ErrInjected = errors.New("faulty: injected failure")

// A Mode says how an injected fault fails an append. The zero Mode is
// invalid.
type Mode uint8

// The fault modes.
const (
	// BeforeWrite fails the append without writing anything.
	BeforeWrite Mode = iota + 1
	// AfterWrite writes the items, then reports a failure: the ambiguous
	// outcome of a lost acknowledgement.
	AfterWrite
	// Slow waits for the fault's delay before writing; if the caller's
	// context is done first, the append returns the context's error and
	// writes nothing.
	Slow
)

// String returns "before_write", "after_write" or "slow".
func (m Mode) String() string {
	switch m {
	case BeforeWrite:
		return "before_write"
	case AfterWrite:
		return "after_write"
	case Slow:
		return "slow"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// A Fault fails an append of the wrapped store.
//
// By default a fault considers every append. Its filters narrow that down
// to the appends that target something: a run (RunID), an item position
// (Seq), an item kind (Kind); an append matches when it matches every
// filter that is set. Nth then counts among the matching appends only, so
// a test aims at "the first append of the final message" without a
// calibration run:
//
//	faulty.FailBefore(1).OfKind(state.KindAssistantMessage).InRun("run_1")
type Fault struct {
	// Nth is the matching append it fires on, counted from 1; 0 fires on
	// every matching append. Without filters every append matches, so Nth
	// counts all appends.
	Nth int
	// RunID, if set, matches the appends of that run only.
	RunID string
	// Seq, if non-zero, matches the appends that hold the item at that
	// position.
	Seq int64
	// Kind, if non-zero, matches the appends that hold an item of that
	// kind.
	Kind state.Kind

	Mode Mode
	// Delay is how long a Slow append waits.
	Delay time.Duration
	// OnFire, if set, is called when the fault fires, before it fails or
	// waits; a test cancels the run's context from it. It runs on the
	// appending goroutine and must not call the store.
	OnFire func()
}

// FailBefore returns a fault that fails the nth append (every append for
// n == 0) without writing.
func FailBefore(n int) Fault { return Fault{Nth: n, Mode: BeforeWrite} }

// FailAfter returns a fault that lets the nth append (every append for n
// == 0) write, then reports a failure.
func FailAfter(n int) Fault { return Fault{Nth: n, Mode: AfterWrite} }

// SlowAppend returns a fault that delays the nth append by d; onFire (may
// be nil) is called as the delay starts.
func SlowAppend(n int, d time.Duration, onFire func()) Fault {
	return Fault{Nth: n, Mode: Slow, Delay: d, OnFire: onFire}
}

// InRun returns a copy of f that matches only the appends of run runID.
func (f Fault) InRun(runID string) Fault {
	f.RunID = runID
	return f
}

// AtSeq returns a copy of f that matches only the appends holding the
// item at position seq.
func (f Fault) AtSeq(seq int64) Fault {
	f.Seq = seq
	return f
}

// OfKind returns a copy of f that matches only the appends holding an
// item of kind k.
func (f Fault) OfKind(k state.Kind) Fault {
	f.Kind = k
	return f
}

// matches reports whether an append of items by run runID passes f's
// filters.
func (f *Fault) matches(runID string, items []state.Item) bool {
	if f.RunID != "" && f.RunID != runID {
		return false
	}
	if f.Seq == 0 && f.Kind == 0 {
		return true
	}
	seq, kind := f.Seq == 0, f.Kind == 0
	for _, it := range items {
		seq = seq || it.Seq() == f.Seq
		kind = kind || it.Kind() == f.Kind
	}
	return seq && kind
}

// An InjectedError reports an injected failure: which append it was (its
// number among all appends, from 1), where it wrote and how it failed.
// Written reports whether the items were stored anyway.
type InjectedError struct {
	Append    int
	SessionID string
	RunID     string
	// Seq is the position of the append's first item, 0 if it had none.
	Seq     int64
	Mode    Mode
	Written bool
}

// Error names the append, its session, run and position, the fault and whether the items were written.
func (e *InjectedError) Error() string {
	s := "faulty: append " + strconv.Itoa(e.Append) + " (session " + strconv.Quote(e.SessionID) +
		" run " + e.RunID + " seq " + strconv.FormatInt(e.Seq, 10) + "): injected " + e.Mode.String() + " failure"
	if e.Written {
		s += " (items written)"
	}
	return s
}

// Unwrap returns [ErrInjected].
func (e *InjectedError) Unwrap() error { return ErrInjected }

// A Store is a [session.Store] that injects faults into the appends of the
// store it wraps; every other method passes through. It is safe for
// concurrent use if the inner store is.
type Store struct {
	inner  session.Store
	faults []Fault

	mu      sync.Mutex
	appends int
	matched []int // per fault, the appends that passed its filters
	fired   int
}

var _ session.Store = (*Store)(nil)

// New wraps inner with the given faults. When several faults match an
// append, the first one given applies. New panics if inner is nil.
func New(inner session.Store, faults ...Fault) *Store {
	if inner == nil {
		panic("faulty: New called with a nil session.Store")
	}
	return &Store{inner: inner, faults: append([]Fault(nil), faults...), matched: make([]int, len(faults))}
}

// Appends returns the number of Append calls so far.
func (s *Store) Appends() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.appends
}

// Fired returns the number of faults injected so far.
func (s *Store) Fired() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fired
}

// Append calls the inner store's Append, unless a fault fires.
func (s *Store) Append(ctx context.Context, sessionID, runID string, items []state.Item) error {
	s.mu.Lock()
	s.appends++
	n := s.appends
	var f *Fault
	for i := range s.faults {
		if !s.faults[i].matches(runID, items) {
			continue
		}
		s.matched[i]++
		if f == nil && (s.faults[i].Nth == 0 || s.faults[i].Nth == s.matched[i]) {
			f = &s.faults[i]
			s.fired++
		}
	}
	s.mu.Unlock()
	if f == nil {
		return s.inner.Append(ctx, sessionID, runID, items)
	}
	if f.OnFire != nil {
		f.OnFire()
	}
	switch f.Mode {
	case AfterWrite:
		if err := s.inner.Append(ctx, sessionID, runID, items); err != nil {
			return err
		}
		return s.injected(n, sessionID, runID, items, f.Mode, true)
	case Slow:
		timer := time.NewTimer(f.Delay)
		defer timer.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		}
		return s.inner.Append(ctx, sessionID, runID, items)
	default:
		return s.injected(n, sessionID, runID, items, BeforeWrite, false)
	}
}

func (s *Store) injected(n int, sessionID, runID string, items []state.Item, m Mode, written bool) *InjectedError {
	e := &InjectedError{Append: n, SessionID: sessionID, RunID: runID, Mode: m, Written: written}
	if len(items) > 0 {
		e.Seq = items[0].Seq()
	}
	return e
}

// List calls the inner store's List.
func (s *Store) List(ctx context.Context, sessionID string, limit int) ([]state.Item, error) {
	return s.inner.List(ctx, sessionID, limit)
}

// ListBefore calls the inner store's ListBefore.
func (s *Store) ListBefore(ctx context.Context, sessionID, runID string, q session.HistoryQuery) (session.History, error) {
	return s.inner.ListBefore(ctx, sessionID, runID, q)
}

// Lookup calls the inner store's Lookup.
func (s *Store) Lookup(ctx context.Context, sessionID, runID string, seq int64) (state.Item, bool, error) {
	return s.inner.Lookup(ctx, sessionID, runID, seq)
}

// Pop calls the inner store's Pop.
func (s *Store) Pop(ctx context.Context, sessionID string) (state.Item, bool, error) {
	return s.inner.Pop(ctx, sessionID)
}

// Clear calls the inner store's Clear.
func (s *Store) Clear(ctx context.Context, sessionID string) error {
	return s.inner.Clear(ctx, sessionID)
}

// Close closes the inner store.
func (s *Store) Close() error { return s.inner.Close() }
