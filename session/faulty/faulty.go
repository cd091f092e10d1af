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
type Fault struct {
	// Nth is the append it fires on, counted from 1; 0 fires on every
	// append.
	Nth  int
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

// An InjectedError reports an injected failure: which append it was and
// how it failed. Written reports whether the items were stored anyway.
type InjectedError struct {
	Append  int
	Mode    Mode
	Written bool
}

func (e *InjectedError) Error() string {
	s := "faulty: append " + strconv.Itoa(e.Append) + ": injected " + e.Mode.String() + " failure"
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
	fired   int
}

var _ session.Store = (*Store)(nil)

// New wraps inner with the given faults. When several faults match an
// append, the first one given applies. New panics if inner is nil.
func New(inner session.Store, faults ...Fault) *Store {
	if inner == nil {
		panic("faulty: New called with a nil session.Store")
	}
	return &Store{inner: inner, faults: append([]Fault(nil), faults...)}
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
		if s.faults[i].Nth == 0 || s.faults[i].Nth == n {
			f = &s.faults[i]
			s.fired++
			break
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
		return &InjectedError{Append: n, Mode: f.Mode, Written: true}
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
		return &InjectedError{Append: n, Mode: BeforeWrite}
	}
}

// List calls the inner store's List.
func (s *Store) List(ctx context.Context, sessionID string, limit int) ([]state.Item, error) {
	return s.inner.List(ctx, sessionID, limit)
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
