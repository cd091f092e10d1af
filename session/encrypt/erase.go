package encrypt

import (
	"context"
	"errors"
	"fmt"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// companionSuffixes name the sessions that hold a session's marks beside
// it (middleware/persistence's WithContinuation: the session ID + a
// suffix); an erasure clears them with the session.
var companionSuffixes = [...]string{"#turnkit.tip", "#turnkit.boundary"}

// An EraseReport says what an erasure removed.
type EraseReport struct {
	Items      int  // the session's items (and its marks' items)
	Runs       int  // checkpoints of the session's runs, with their pieces and contexts
	Scrubbed   bool // the backend rewrote its files without the deleted rows ([Scrubber])
	Tombstoned bool // the session's key record now refuses reads and writes ([Store.Erase])
	Shredded   bool // the session's data key was deleted ([Shred])
}

// A Scrubber is a backend whose deleted rows can linger in its files
// (free pages, a write-ahead log) until it rewrites them: Scrub does,
// after an erasure. session/sqlite implements it.
type Scrubber interface {
	Scrub(ctx context.Context) error
}

// Erase deletes everything session sessionID left behind in sessions and
// runs (one backend or two stores): the checkpoints of its runs, found
// by runs' [state.Lister] (their heads, pieces, contexts and listing
// entries go with each Delete), its items and its runs' places, its
// marks' companion sessions, and the session's listing entry (Clear);
// then, if sessions is a [Scrubber], it scrubs. It works on plain and
// sealed stores alike; a [Store]'s Erase adds the tombstone and the
// crypto-shredding. A run of the session saved while Erase goes on may
// survive it: stop the session's work first.
//
// runs that is not a Lister fails with an error before anything is
// deleted. Erase is idempotent; after an error, call it again.
func Erase(ctx context.Context, sessions session.Store, runs state.Store, sessionID string) (EraseReport, error) {
	var rep EraseReport
	if sessionID == "" {
		return rep, fmt.Errorf("encrypt: erase: empty session ID: %w", session.ErrInvalid)
	}
	l, ok := runs.(state.Lister)
	if !ok {
		return rep, fmt.Errorf("encrypt: erase session %q: %T cannot list the session's runs", sessionID, runs)
	}
	var ids []string
	q := state.RunQuery{SessionID: sessionID, Limit: state.MaxRunLimit}
	for {
		page, err := l.ListRuns(ctx, q)
		if err != nil {
			return rep, fmt.Errorf("encrypt: erase session %q: list its runs: %w", sessionID, err)
		}
		for _, sum := range page.Runs {
			ids = append(ids, sum.RunID)
		}
		if page.Next == "" {
			break
		}
		q.Cursor = page.Next
	}
	for _, id := range ids {
		if err := runs.Delete(ctx, id); err != nil {
			return rep, fmt.Errorf("encrypt: erase session %q: delete run %q: %w", sessionID, id, err)
		}
		rep.Runs++
	}
	for _, sid := range append([]string{sessionID}, sessionID+companionSuffixes[0], sessionID+companionSuffixes[1]) {
		items, err := sessions.List(ctx, sid, 0)
		if err != nil && !errors.Is(err, ErrNoKey) {
			return rep, fmt.Errorf("encrypt: erase session %q: %w", sid, err)
		}
		if err := sessions.Clear(ctx, sid); err != nil {
			return rep, fmt.Errorf("encrypt: erase session %q: %w", sid, err)
		}
		rep.Items += len(items)
	}
	if sc, ok := sessions.(Scrubber); ok {
		if err := sc.Scrub(ctx); err != nil {
			return rep, fmt.Errorf("encrypt: erase session %q: scrub: %w", sessionID, err)
		}
		rep.Scrubbed = true
	}
	return rep, nil
}

// An EraseOption configures [Store.Erase].
type EraseOption interface{ applyErase(*eraseConfig) }

type eraseConfig struct{ shred bool }

type eraseOptionFunc func(*eraseConfig)

func (f eraseOptionFunc) applyErase(c *eraseConfig) { f(c) }

// Shred makes [Store.Erase] delete the session's data key too
// (crypto-shredding): the tombstone it leaves holds no key material, so
// any copy of the session's ciphertexts (a backup, a replica, a dead
// tuple) is unreadable once no copy of the key record is left either
// (see [KeyStore]). Without it the wrapped key stays in the tombstone.
func Shred() EraseOption { return eraseOptionFunc(func(c *eraseConfig) { c.shred = true }) }

// Erase erases the session from the backend as the package's [Erase]
// does, after it has replaced the session's key record (and its
// companions') by a tombstone: from then on every read and write of the
// session fails with [ErrErased], here at once and in other processes
// when their cached key expires ([WithCacheTTL]), so a run of the session
// that was still paused fails on resume (its checkpoint is gone: Load
// fails with [state.ErrNotFound], and a save of a state held elsewhere
// with ErrErased). With [Shred] the tombstone holds no key material.
func (s *Store) Erase(ctx context.Context, sessionID string, opts ...EraseOption) (EraseReport, error) {
	var cfg eraseConfig
	for _, o := range opts {
		if o != nil {
			o.applyErase(&cfg)
		}
	}
	ks, err := s.kr.keyStore()
	if err != nil {
		return EraseReport{}, err
	}
	for _, sid := range append([]string{sessionID}, sessionID+companionSuffixes[0], sessionID+companionSuffixes[1]) {
		if err := tombstone(ctx, ks, sid, cfg.shred); err != nil {
			return EraseReport{}, &SealError{SessionID: sid, What: "data key", Err: err}
		}
		s.kr.put(&dataKey{sid: sid, erased: true})
	}
	rep, err := Erase(ctx, s.inner, s.inner, sessionID)
	rep.Tombstoned, rep.Shredded = true, cfg.shred
	return rep, err
}

// tombstone replaces the session's key record by one marked erased,
// without the wrapped key when shred is set.
func tombstone(ctx context.Context, ks KeyStore, sid string, shred bool) error {
	for range maxKeyRetries {
		rec, ok, err := ks.Get(ctx, sid)
		if err != nil {
			return err
		}
		next := KeyRecord{ID: rec.ID, KEK: rec.KEK, Wrapped: rec.Wrapped, Erased: true}
		if shred {
			next.KEK, next.Wrapped = "", nil
		}
		if !ok {
			next.ID = "0000000000000000"
			if _, err = ks.Create(ctx, sid, next); err == nil {
				continue // read back: another process may have created one first
			}
		} else if rec.equal(next) {
			return nil
		} else {
			err = ks.Replace(ctx, sid, rec, next)
		}
		if err != nil && !errors.Is(err, state.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("encrypt: tombstone the key record of session %q: it keeps changing: %w", sid, state.ErrConflict)
}
