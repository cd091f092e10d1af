package storage_test

// The backend here is written as a store author outside turnkit would
// write one: it imports only turnkit's public packages (state, storage and
// the statetest suite), never internal/runcore.

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/statetest"
	"github.com/turnkit/turnkit/state/storage"
)

// mapBackend keeps what saves wrote in a map, under one lock: a
// compare-and-swap on the version per run, pieces by Seq.
type mapBackend struct {
	mu   sync.Mutex
	runs map[string]*stored
}

type stored struct {
	version int64
	head    []byte
	context []byte
	pieces  map[int64]state.Piece
}

func newMapBackend() *mapBackend { return &mapBackend{runs: make(map[string]*stored)} }

func (b *mapBackend) Write(ctx context.Context, d *state.Delta) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.runs[d.RunID]
	var cur int64
	if s != nil {
		cur = s.version
	}
	if cur != d.Base {
		return 0, &state.StoreError{Op: "save", RunID: d.RunID, Err: state.ErrConflict, Have: d.Base, Stored: cur}
	}
	if s == nil || d.Full {
		s = &stored{pieces: make(map[int64]state.Piece, len(d.Items))}
		b.runs[d.RunID] = s
	}
	s.version, s.head = d.Version, d.Head
	if d.Context != nil {
		s.context = d.Context
	}
	for _, p := range d.Items {
		s.pieces[p.Seq] = p
	}
	return d.Version, nil
}

func (b *mapBackend) Read(ctx context.Context, runID string) (storage.Stored, error) {
	if err := ctx.Err(); err != nil {
		return storage.Stored{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.runs[runID]
	if !ok {
		return storage.Stored{}, state.ErrNotFound
	}
	out := storage.Stored{Head: s.head, Context: s.context, Pieces: make([]state.Piece, 0, len(s.pieces))}
	for _, p := range s.pieces {
		out.Pieces = append(out.Pieces, p)
	}
	return out, nil
}

func (b *mapBackend) Delete(ctx context.Context, runID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	delete(b.runs, runID)
	b.mu.Unlock()
	return nil
}

// rewrite edits a stored head behind the store's back.
func (b *mapBackend) rewrite(t *testing.T, runID string, edit func([]byte) []byte) {
	b.mu.Lock()
	s, ok := b.runs[runID]
	b.mu.Unlock()
	if !ok {
		t.Fatalf("no checkpoint stored for %q", runID)
	}
	head := edit(s.head)
	b.mu.Lock()
	s.head = head
	b.mu.Unlock()
}

func TestStore(t *testing.T) {
	statetest.TestStore(t, func(t *testing.T) state.Store { return storage.NewStore(newMapBackend()) })
}

func TestSignedStore(t *testing.T) {
	b := newMapBackend()
	statetest.TestSignedStore(t,
		func(t *testing.T, m []state.MarshalOption, u []state.UnmarshalOption) state.Store {
			return storage.NewStore(b, storage.WithCodec(m, u))
		},
		b.rewrite)
}

// failingBackend fails every write with err, or reports version off.
type failingBackend struct {
	*mapBackend
	err error
	off int64
}

func (b *failingBackend) Write(ctx context.Context, d *state.Delta) (int64, error) {
	if b.err != nil {
		return 0, b.err
	}
	v, err := b.mapBackend.Write(ctx, d)
	return v + b.off, err
}

// TestSaveRecordsOnlyWhatWasWritten checks that a run's version moves only
// when its backend wrote the delta and said so: after a failed write, or a
// write that reports another version, the run saves again from where it
// was.
func TestSaveRecordsOnlyWhatWasWritten(t *testing.T) {
	ctx := t.Context()
	down := errors.New("disk full")
	tests := []struct {
		name string
		b    *failingBackend
		want error
	}{
		{"WriteFails", &failingBackend{mapBackend: newMapBackend(), err: down}, down},
		{"WrongVersion", &failingBackend{mapBackend: newMapBackend(), off: 1}, storage.ErrVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := statetest.SampleRun(t, "run-"+tt.name)
			err := storage.Save(ctx, tt.b, run)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Save: %v, want an error wrapping %v", err, tt.want)
			}
			if se, ok := errors.AsType[*state.StoreError](err); !ok || se.RunID != run.ID() || se.Op != "save" {
				t.Errorf("Save: %#v, want a *state.StoreError of save on %q", err, run.ID())
			}
			if run.Version() != 0 {
				t.Errorf("run's version = %d after a failed save, want 0", run.Version())
			}
			good := newMapBackend()
			if err := storage.Save(ctx, good, run); err != nil {
				t.Fatalf("Save to a working backend: %v", err)
			}
			if run.Version() != 1 {
				t.Errorf("run's version = %d after its first save, want 1", run.Version())
			}
			got, err := storage.Load(ctx, good, run.ID())
			if err != nil {
				t.Fatal(err)
			}
			if diff := statetest.Diff(t, got, run); diff != "" {
				t.Errorf("loaded run differs from the saved one:\n%s", diff)
			}
		})
	}
}

// TestSaveWritesOnlyTheChange checks that a second save hands the backend
// a delta on the first: not full, based on version 1, without the items
// already written.
func TestSaveWritesOnlyTheChange(t *testing.T) {
	ctx := t.Context()
	rec := &recordingBackend{mapBackend: newMapBackend()}
	run := statetest.SampleRun(t, "run-1")
	if err := storage.Save(ctx, rec, run); err != nil {
		t.Fatal(err)
	}
	run.SetExtension("note", []byte(`"again"`))
	if err := storage.Save(ctx, rec, run); err != nil {
		t.Fatal(err)
	}
	if len(rec.deltas) != 2 {
		t.Fatalf("backend got %d writes, want 2", len(rec.deltas))
	}
	first, second := rec.deltas[0], rec.deltas[1]
	if !first.Full || first.Base != 0 || len(first.Items) == 0 {
		t.Errorf("first delta: Full=%v Base=%d items=%d, want a full write of the run's items", first.Full, first.Base, len(first.Items))
	}
	if second.Full || second.Base != 1 || second.Version != 2 || len(second.Items) != 0 {
		t.Errorf("second delta: Full=%v Base=%d Version=%d items=%d, want version 2 on 1 with no items",
			second.Full, second.Base, second.Version, len(second.Items))
	}
}

// recordingBackend keeps every delta it wrote.
type recordingBackend struct {
	*mapBackend
	deltas []*state.Delta
}

func (b *recordingBackend) Write(ctx context.Context, d *state.Delta) (int64, error) {
	v, err := b.mapBackend.Write(ctx, d)
	if err == nil {
		b.deltas = append(b.deltas, d)
	}
	return v, err
}

// listingBackend is a map backend that also lists what it keeps: every
// run's latest summary, whatever the query.
type listingBackend struct {
	*mapBackend
	summaries map[string]state.RunSummary
}

func (b *listingBackend) Write(ctx context.Context, d *state.Delta) (int64, error) {
	v, err := b.mapBackend.Write(ctx, d)
	if err == nil {
		b.mu.Lock()
		b.summaries[d.RunID] = d.Summary
		b.mu.Unlock()
	}
	return v, err
}

func (b *listingBackend) ListRuns(ctx context.Context, q state.RunQuery) (state.RunPage, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var p state.RunPage
	for _, s := range b.summaries {
		p.Runs = append(p.Runs, s)
	}
	return p, nil
}

// TestNewStoreListsWhenTheBackendDoes checks that the store is a
// state.Lister exactly when its backend is one, and lists through it.
func TestNewStoreListsWhenTheBackendDoes(t *testing.T) {
	if _, ok := storage.NewStore(newMapBackend()).(state.Lister); ok {
		t.Error("a store over a backend that does not list is a state.Lister")
	}
	s := storage.NewStore(&listingBackend{mapBackend: newMapBackend(), summaries: map[string]state.RunSummary{}})
	l, ok := s.(state.Lister)
	if !ok {
		t.Fatal("a store over a listing backend is not a state.Lister")
	}
	run := statetest.SampleRun(t, "run-listed")
	if err := s.Save(t.Context(), run); err != nil {
		t.Fatal(err)
	}
	page, err := l.ListRuns(t.Context(), state.RunQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Runs) != 1 || page.Runs[0].RunID != run.ID() || page.Runs[0].Version != 1 {
		t.Errorf("ListRuns = %+v, want the one run saved, at version 1", page.Runs)
	}
}
