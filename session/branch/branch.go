package branch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// Errors of a fork.
var (
	// ErrNotForkable means the run is neither paused nor finished: it
	// may be going on, and a fork would copy a moving target.
	ErrNotForkable = errors.New("branch: run is neither paused nor finished")
	// ErrTargetExists means the fork's session already holds items, or
	// its run already has a checkpoint.
	ErrTargetExists = errors.New("branch: the fork's session or run exists")
)

// A Target names a fork: its run ID and, when not "", its session ID.
type Target struct {
	RunID     string
	SessionID string
}

// entries returns the session's items in order with their runs, read a
// page at a time from the newest back through the store's [session.Pager].
func entries(ctx context.Context, s session.Store, sessionID string) ([]session.Entry, error) {
	p, ok := s.(session.Pager)
	if !ok {
		return nil, fmt.Errorf("branch: %T does not page sessions, which a fork reads", s)
	}
	return readBack(func(q session.PageQuery) (session.ItemPage, error) {
		page, err := p.ListPage(ctx, sessionID, q)
		if err != nil {
			return page, fmt.Errorf("branch: read session %q: %w", sessionID, err)
		}
		return page, nil
	})
}

// readBack returns every entry of a session in order, read by page a page
// at a time from the newest back.
func readBack(page func(session.PageQuery) (session.ItemPage, error)) ([]session.Entry, error) {
	var pages [][]session.Entry // newest first, each in order
	q := session.PageQuery{Limit: session.MaxPageLimit}
	for {
		p, err := page(q)
		if err != nil {
			return nil, err
		}
		pages = append(pages, p.Entries)
		if p.Next == "" {
			break
		}
		q.Cursor = p.Next
	}
	var out []session.Entry
	for _, p := range slices.Backward(pages) {
		out = append(out, p...)
	}
	return out, nil
}

// copyEntries appends es to session to, one append per run in order, so
// that each run gets its place in the order of es.
func copyEntries(ctx context.Context, s session.Store, to string, es []session.Entry, rename map[string]string) error {
	for i := 0; i < len(es); {
		j := i
		for j < len(es) && es[j].RunID == es[i].RunID {
			j++
		}
		items := make([]state.Item, 0, j-i)
		for _, e := range es[i:j] {
			items = append(items, e.Item)
		}
		run := es[i].RunID
		if r, ok := rename[run]; ok {
			run = r
		}
		if err := s.Append(ctx, to, run, items); err != nil {
			return fmt.Errorf("branch: copy to session %q: %w", to, err)
		}
		i = j
	}
	return nil
}

// emptySession fails with [ErrTargetExists] if the session holds items.
func emptySession(ctx context.Context, s session.Store, sid string) error {
	items, err := s.List(ctx, sid, 1)
	if err != nil {
		return fmt.Errorf("branch: read session %q: %w", sid, err)
	}
	if len(items) > 0 {
		return fmt.Errorf("branch: session %q holds items: %w", sid, ErrTargetExists)
	}
	return nil
}

// Session forks session from at position n into session to: the first n
// items of from (all of them if n exceeds its length), in order, become
// the first items of to, which must hold no item ([ErrTargetExists]
// otherwise). from is only read. It returns the number of items the fork
// starts with.
//
// Given a [*Store] (see [Wrap]), the fork shares the items by reference:
// it writes one link record, whatever n, and reads of to through the
// Store resolve it. Given another store, it copies the items, with their
// runs and positions, O(n) bytes; the store must then be a
// [session.Pager] (every store of this module is).
func Session(ctx context.Context, s session.Store, from, to string, n int) (int, error) {
	if from == "" || to == "" || from == to || n < 0 {
		return 0, fmt.Errorf("branch: fork session %q into %q at %d: %w", from, to, n, session.ErrInvalid)
	}
	if err := emptySession(ctx, s, to); err != nil {
		return 0, err
	}
	if ls, ok := s.(*Store); ok {
		return ls.fork(ctx, from, to, n)
	}
	es, err := entries(ctx, s, from)
	if err != nil {
		return 0, err
	}
	es = es[:min(n, len(es))]
	return len(es), copyEntries(ctx, s, to, es, nil)
}

// Run forks the stored run runID into a new run: its checkpoint, as
// stored, becomes the checkpoint of run to.RunID, saved to runs (which
// must hold none: [ErrTargetExists]), and returned at its stored version.
// Only a paused or a finished run forks ([ErrNotForkable]); the original
// run and its session are only read. Resume the fork as any run: with
// other decisions on its pending approvals, another agent or model.
//
// With to.SessionID, the fork continues in a new session (which must
// hold no item), that gets a copy of what the run's session held up to
// the run: the items of the runs placed before it, and the run's own
// items, under the fork's run ID, so that the fork's session is a valid
// prefix of the fork and its history reads back as the run's did.
// Without it the fork shares the run's session; then only one of the two
// should go on, or their items interleave.
func Run(ctx context.Context, sessions session.Store, runs state.Store, runID string, to Target) (*state.Run, error) {
	if to.RunID == "" || to.RunID == runID {
		return nil, fmt.Errorf("branch: fork run %q into %q: %w", runID, to.RunID, session.ErrInvalid)
	}
	run, err := runs.Load(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("branch: fork run %q: %w", runID, err)
	}
	if st := run.Status(); st != state.RunPaused && st != state.RunFinished {
		return nil, fmt.Errorf("branch: fork run %q (%s): %w", runID, st, ErrNotForkable)
	}
	sid := run.SessionID()
	if to.SessionID != "" && sid != "" {
		if err := forkSessionOf(ctx, sessions, sid, runID, to); err != nil {
			return nil, err
		}
		sid = to.SessionID
	}
	fork, err := renamed(run, to.RunID, sid)
	if err != nil {
		return nil, err
	}
	if err := runs.Save(ctx, fork); err != nil {
		if errors.Is(err, state.ErrConflict) {
			return nil, fmt.Errorf("branch: fork run %q into %q: %w: %w", runID, to.RunID, ErrTargetExists, err)
		}
		return nil, fmt.Errorf("branch: save fork %q of run %q: %w", to.RunID, runID, err)
	}
	return fork, nil
}

// forkSessionOf gives session to.SessionID what session sid held up to
// run runID: the items of the runs placed before it (by reference through
// a [*Store], else copied) and the run's own items, copied under
// to.RunID.
func forkSessionOf(ctx context.Context, sessions session.Store, sid, runID string, to Target) error {
	if err := emptySession(ctx, sessions, to.SessionID); err != nil {
		return err
	}
	es, err := entries(ctx, sessions, sid) // through a Store, the shared items too
	if err != nil {
		return err
	}
	// Up to the run: the runs placed before it, and its own items.
	place := int64(-1)
	for _, e := range es {
		if e.RunID == runID {
			place = e.Place
			break
		}
	}
	kept := es[:0:0]
	ls, linked := sessions.(*Store)
	if linked {
		h, err := ls.ListBefore(ctx, sid, runID, session.HistoryQuery{})
		if err != nil {
			return fmt.Errorf("branch: read session %q: %w", sid, err)
		}
		if _, err := ls.fork(ctx, sid, to.SessionID, len(h.Items)); err != nil {
			return err
		}
	}
	for _, e := range es {
		if e.RunID == runID || !linked && (place < 0 || e.Place < place) {
			kept = append(kept, e)
		}
	}
	return copyEntries(ctx, sessions, to.SessionID, kept, map[string]string{runID: to.RunID})
}

// renamed returns a copy of run named id, in session sid: the run's
// portable checkpoint with its ID and session replaced, decoded again.
func renamed(run *state.Run, id, sid string) (*state.Run, error) {
	data, err := state.Marshal(run)
	if err != nil {
		return nil, fmt.Errorf("branch: fork run %q: %w", run.ID(), err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("branch: fork run %q: %w", run.ID(), err)
	}
	var payload map[string]json.RawMessage
	if err := json.Unmarshal(doc["run"], &payload); err != nil {
		return nil, fmt.Errorf("branch: fork run %q: %w", run.ID(), err)
	}
	payload["id"], _ = json.Marshal(id) // strings: cannot fail
	if sid != "" {
		payload["session_id"], _ = json.Marshal(sid)
	}
	if err := dropHistoryNote(payload); err != nil {
		return nil, fmt.Errorf("branch: fork run %q: %w", run.ID(), err)
	}
	if doc["run"], err = json.Marshal(payload); err != nil {
		return nil, fmt.Errorf("branch: fork run %q: %w", run.ID(), err)
	}
	if data, err = json.Marshal(doc); err != nil {
		return nil, fmt.Errorf("branch: fork run %q: %w", run.ID(), err)
	}
	fork, err := state.Unmarshal(data)
	if err != nil {
		return nil, fmt.Errorf("branch: fork run %q: %w", run.ID(), err)
	}
	runcore.SetVersion(fork, 0) // a new checkpoint
	return fork, nil
}

// dropHistoryNote removes from a marshaled run's payload the note that its
// context is its session's history, so the fork holds that context whole.
// A reference would not hold for the fork: it has no place in the session
// yet, and in a copied session the items carry the copy's write stamps,
// not the ones the reference was read at.
func dropHistoryNote(payload map[string]json.RawMessage) error {
	raw, ok := payload["extension"]
	if !ok {
		return nil
	}
	var ext map[string]json.RawMessage
	if err := json.Unmarshal(raw, &ext); err != nil {
		return err
	}
	if _, ok := ext["turnkit.history"]; !ok {
		return nil
	}
	delete(ext, "turnkit.history")
	if len(ext) == 0 {
		delete(payload, "extension")
		return nil
	}
	var err error
	payload["extension"], err = json.Marshal(ext)
	return err
}
