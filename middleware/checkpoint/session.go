package checkpoint

import (
	"context"
	"errors"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// An aheadSession is the session store of [WithSession] with the
// write-ahead: before each Append made for a run this checkpointer serves,
// the run is saved, so the session never holds model output the checkpoint
// has not seen. The append of a finished run (its final commit) is
// recorded in the checkpoint before it is made, so that
// [Checkpointer.Resume] can complete it after a crash. If the save fails,
// the append is not made and Append returns the [*SaveError]. Appends for
// other runs, and every other method, pass through to the inner store.
type aheadSession struct {
	session.Store
	c *Checkpointer
}

var _ session.Store = (*aheadSession)(nil)

// aheadChanges is an aheadSession over a store that reads changes
// ([session.ChangeReader]): reads pass through, so persistence's history
// cache reads through it as it would read the store itself.
type aheadChanges struct {
	*aheadSession
	r session.ChangeReader
}

var _ session.ChangeReader = aheadChanges{}

// ReadChanges passes through to the inner store.
func (s aheadChanges) ReadChanges(ctx context.Context, sessionID string, q session.ChangeQuery) (session.Changes, error) {
	return s.r.ReadChanges(ctx, sessionID, q)
}

// ahead returns the write-ahead session store of c over sessions, a
// [session.ChangeReader] when sessions is one.
func ahead(sessions session.Store, c *Checkpointer) session.Store {
	s := &aheadSession{Store: sessions, c: c}
	if r, ok := sessions.(session.ChangeReader); ok {
		return aheadChanges{s, r}
	}
	return s
}

// An atomicStore saves a run's checkpoint and appends to a session in one
// transaction: a store that keeps both in one database (session/sqlite,
// session/postgres, session/redis on one server) offers it. On any error
// it writes nothing and leaves run as it was.
type atomicStore interface {
	SaveAppend(ctx context.Context, run *state.Run, sessionID string, items []state.Item) error
}

// atomic returns the session store as an atomicStore when the
// checkpointer's state store is the same store, or the store it wraps, so
// one transaction covers the checkpoint and the append.
func (s *aheadSession) atomic() (atomicStore, bool) {
	as, ok := s.Store.(atomicStore)
	if !ok || !savesInto(s.Store, s.c.store) {
		return nil, false
	}
	return as, true
}

// maxWrapDepth bounds the wrappers savesInto looks through.
const maxWrapDepth = 8

// savesInto reports whether the session store ss saves and appends into
// st: ss is st, or a wrapper of it (Inner, as session/branch's Store
// offers) whose every layer down to st saves and appends.
func savesInto(ss session.Store, st state.Store) bool {
	for range maxWrapDepth {
		if any(ss) == any(st) {
			return true
		}
		w, ok := ss.(interface{ Inner() session.Store })
		if !ok {
			return false
		}
		if ss = w.Inner(); ss == nil {
			return false
		}
		if _, ok := ss.(atomicStore); !ok {
			return false
		}
	}
	return false
}

// saveAppendLocked saves the run and appends items in one transaction of
// as, so the checkpoint is never behind the session by construction. A
// final commit is still recorded in the run first: if the transaction
// fails, the run's end save keeps the record, and Resume completes the
// commit from it.
func (lr *live) saveAppendLocked(ctx context.Context, as atomicStore, sessionID string, items []state.Item) error {
	if lr.lost != nil {
		return lr.lost
	}
	_, final := lr.run.FinalOutput()
	if final {
		if err := setCommit(lr.run, sessionID, items); err != nil {
			return err
		}
	}
	err := as.SaveAppend(ctx, lr.run, sessionID, items)
	switch {
	case err == nil:
		lr.saved = true
		if final {
			clearCommit(lr.run) // done; the run's next save records it
		}
		return nil
	case errors.Is(err, state.ErrConflict):
		stage := StageAppend
		if !lr.saved {
			stage = StageClaim // the first save of an invocation claims the run
		}
		lr.lost = &SaveError{RunID: lr.run.ID(), Stage: stage, Err: err}
		return lr.lost
	}
	if lr.sw.turn != 0 && lr.sw.turn == lr.run.Turn() {
		lr.sw.undo() // the handoff turn's commit failed
		lr.sw = handoff{}
	}
	return err
}

// Append saves the run, then appends; in one transaction where the store
// offers it.
func (s *aheadSession) Append(ctx context.Context, sessionID, runID string, items []state.Item) error {
	lr, ok := ctx.Value(liveKey{}).(*live)
	if !ok || lr.c != s.c || lr.run.ID() != runID {
		return s.Store.Append(ctx, sessionID, runID, items)
	}
	lr.mu.Lock()
	defer lr.mu.Unlock() // appends of one run are ordered with its saves
	if as, ok := s.atomic(); ok {
		return lr.saveAppendLocked(ctx, as, sessionID, items)
	}
	_, final := lr.run.FinalOutput()
	if final {
		if err := setCommit(lr.run, sessionID, items); err != nil {
			return err
		}
	}
	if err := lr.saveLocked(ctx, StageAppend); err != nil {
		return err
	}
	err := s.Store.Append(ctx, sessionID, runID, items)
	switch {
	case err == nil && final:
		clearCommit(lr.run) // done; the run's next save records it
	case err != nil && lr.sw.turn != 0 && lr.sw.turn == lr.run.Turn():
		// The commit of a handoff turn failed: the runner does not switch
		// agents, and neither does the run.
		lr.sw.undo()
		lr.sw = handoff{}
	}
	return err
}
