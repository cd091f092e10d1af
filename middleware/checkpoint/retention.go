package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/turnkit/turnkit/state"
)

// retentionKey is the key of a finished run's record of when it finished,
// written under [KeepFor].
const retentionKey = "turnkit.retention"

// finishRecord is the JSON under retentionKey.
type finishRecord struct {
	Finished time.Time `json:"finished"`
}

// stampFinished records in run when it finished, once, so that the end
// save carries it.
func (c *Checkpointer) stampFinished(run *state.Run) {
	if _, ok := run.Extension(retentionKey); ok {
		return
	}
	data, err := json.Marshal(finishRecord{Finished: c.cfg.now().UTC()})
	if err != nil { // a time.Time always marshals
		return
	}
	run.SetExtension(retentionKey, data)
}

// finishedAt reads the record stampFinished wrote.
func finishedAt(run *state.Run) (time.Time, bool) {
	data, ok := run.Extension(retentionKey)
	if !ok {
		return time.Time{}, false
	}
	var rec finishRecord
	if json.Unmarshal(data, &rec) != nil || rec.Finished.IsZero() {
		return time.Time{}, false
	}
	return rec.Finished, true
}

// prune applies the retention after run returned finished with its final
// commit in the session. It is best effort: a checkpoint it fails to
// delete is one the next prune finds again, or one KeepAll keeps.
func (c *Checkpointer) prune(ctx context.Context, run *state.Run) {
	r := c.cfg.retention
	if r.kind == deleteFinished {
		_ = c.store.Delete(ctx, run.ID())
		return
	}
	at, _ := finishedAt(run)
	c.done.remember(run.ID(), run.Version(), at)
	sid := run.SessionID()
	switch {
	case sid == "": // no session to count in: kept
	case r.kind == keepLast:
		c.keepLast(ctx, sid, r.n)
	case r.kind == keepFor:
		c.keepFor(ctx, sid, c.cfg.now().Add(-r.d))
	}
}

// committedRun reports whether the run of the finished summary s has its
// final commit in the session, and when it finished (zero without a
// record). A run finished in the checkpoint whose final commit a crash cut
// short is listed as finished, but only its checkpoint can complete the
// commit ([Checkpointer.Resume]): it is not committed, and is kept. What
// the checkpointer does not remember it reads from the store.
func (c *Checkpointer) committedRun(ctx context.Context, s state.RunSummary) (time.Time, bool) {
	if at, ok := c.done.lookup(s.RunID, s.Version); ok {
		return at, true
	}
	run, err := c.store.Load(ctx, s.RunID)
	if err != nil || !committed(run) {
		return time.Time{}, false
	}
	at, _ := finishedAt(run)
	c.done.remember(s.RunID, run.Version(), at)
	return at, true
}

// finishedRuns calls yield with the finished runs of session sid, newest
// first, reading pages of first (then state.MaxRunLimit) summaries, until
// yield returns false or a listing fails.
func (c *Checkpointer) finishedRuns(ctx context.Context, sid string, first int, yield func(state.RunSummary) bool) {
	q := state.RunQuery{Status: state.RunFinished, SessionID: sid, Limit: first}
	for {
		page, err := c.lister.ListRuns(ctx, q)
		if err != nil {
			return
		}
		for _, r := range page.Runs {
			if !yield(r) {
				return
			}
		}
		if page.Next == "" {
			return
		}
		q.Cursor, q.Limit = page.Next, state.MaxRunLimit
	}
}

// delete deletes the checkpoint of a committed finished run.
func (c *Checkpointer) delete(ctx context.Context, runID string) {
	if err := c.store.Delete(ctx, runID); err == nil || errors.Is(err, state.ErrNotFound) {
		c.done.forget(runID)
	}
}

// keepLast deletes the committed finished runs of session sid after its n
// newest finished runs.
func (c *Checkpointer) keepLast(ctx context.Context, sid string, n int) {
	seen := 0
	c.finishedRuns(ctx, sid, n+1, func(s state.RunSummary) bool {
		if seen++; seen > n && s.Status == state.RunFinished {
			if _, ok := c.committedRun(ctx, s); ok {
				c.delete(ctx, s.RunID)
			}
		}
		return true
	})
}

// keepFor deletes the committed finished runs of session sid that
// finished before cutoff, from the oldest first save, up to the first one
// it keeps.
func (c *Checkpointer) keepFor(ctx context.Context, sid string, cutoff time.Time) {
	var runs []state.RunSummary
	c.finishedRuns(ctx, sid, state.MaxRunLimit, func(s state.RunSummary) bool {
		runs = append(runs, s)
		return true
	})
	for i := len(runs) - 1; i >= 0; i-- { // oldest first
		at, ok := c.committedRun(ctx, runs[i])
		if !ok || at.IsZero() || !at.Before(cutoff) {
			return // kept, and so is every run after it
		}
		c.delete(ctx, runs[i].RunID)
	}
}

// maxFinishTimes bounds the finish times a checkpointer remembers.
const maxFinishTimes = 4096

// finishTimes remembers the runs known to be finished with their final
// commit in the session, by run ID and the version that was read or
// saved, with when they finished (zero without a record), so that a prune
// reads each checkpoint at most once.
type finishTimes struct {
	mu sync.Mutex
	m  map[string]finishTime
}

type finishTime struct {
	version int64
	at      time.Time
}

func (f *finishTimes) remember(runID string, version int64, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil || len(f.m) >= maxFinishTimes {
		f.m = make(map[string]finishTime) // start over: a forgotten time is read again
	}
	f.m[runID] = finishTime{version: version, at: at}
}

func (f *finishTimes) lookup(runID string, version int64) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ft, ok := f.m[runID]
	if !ok || ft.version != version {
		return time.Time{}, false
	}
	return ft.at, true
}

func (f *finishTimes) forget(runID string) {
	f.mu.Lock()
	delete(f.m, runID)
	f.mu.Unlock()
}
