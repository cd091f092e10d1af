package filestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/storage"
)

// A Store is a [state.Store] that keeps each run in a directory: a head
// file named after the run ID (escaped) with ".json", and beside it a
// ".saves" folder with one file per save that wrote items, named by its
// version (see [state.Run.Delta]). A save writes its items to a temporary
// file, syncs it and renames it into place, then does the same for the
// head: the head's rename commits the save, so a reader or a crash sees
// the old checkpoint or the new one, never a mix, and a save file of a
// version the head has not reached is ignored. A head file that is a whole
// checkpoint (the format of earlier versions) loads as such. The
// compare-and-swap runs under a lock held by this process and, on Unix, an
// advisory file lock on the directory's ".lock" file, so several processes
// may share the directory. It is safe for concurrent use.
//
// It lists its runs ([Store.ListRuns], a [state.Lister]) from an index of
// small files in the directory's ".runs" folder, written by each save
// before the head's rename and tidied after it, and checked against the
// heads when read: a save or delete that dies half-way never makes a
// listing report what the checkpoints do not hold.
type Store struct {
	dir string
	cfg config
	mu  sync.Mutex
}

var (
	_ state.Store  = (*Store)(nil)
	_ state.Lister = (*Store)(nil)
)

// New returns a store in dir, creating the directory if needed. In a
// directory written by a version without the listing's index, it reads
// every checkpoint once to index it.
func New(dir string, opts ...Option) (*Store, error) {
	if err := os.MkdirAll(filepath.Join(dir, indexDir), 0o750); err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	s := &Store{dir: dir, cfg: newConfig(opts)}
	if err := s.indexEarlier(); err != nil {
		return nil, fmt.Errorf("filestore: index the checkpoints in %s: %w", dir, err)
	}
	return s, nil
}

// Path returns the file that holds the head of the run's checkpoint.
func (s *Store) Path(runID string) string {
	name := url.PathEscape(runID)
	if strings.HasPrefix(name, ".") {
		name = "%2E" + name[1:]
	}
	return filepath.Join(s.dir, name+".json")
}

// saves returns the directory that holds the run's saves: one file per
// save, named by its version, with the items (and context) it wrote.
func (s *Store) saves(runID string) string {
	return strings.TrimSuffix(s.Path(runID), ".json") + ".saves"
}

// A fileSave is one save's file: the items it wrote and, when it replaced
// it, the run's context.
type fileSave struct {
	Version int64           `json:"version"`
	Context json.RawMessage `json:"context,omitempty"`
	Items   []filePiece     `json:"items"`
}

type filePiece struct {
	Seq  int64           `json:"seq"`
	Data json.RawMessage `json:"data"`
}

// Load reads the run's checkpoint, or returns [state.ErrNotFound].
func (s *Store) Load(ctx context.Context, runID string) (*state.Run, error) {
	return storage.Load(ctx, backend{s}, runID, s.cfg.unmarshal...)
}

// backend is the store as a [storage.Backend]: what it keeps of each run,
// without the run.
type backend struct{ s *Store }

// Read reads the head and the save files the head needs: those of the
// versions since the last full save.
func (b backend) Read(ctx context.Context, runID string) (storage.Stored, error) {
	s := b.s
	if err := ctx.Err(); err != nil {
		return storage.Stored{}, err
	}
	if runID == "" {
		return storage.Stored{}, &state.StoreError{Op: "load", RunID: runID, Err: state.ErrNotFound}
	}
	head, err := os.ReadFile(s.Path(runID))
	if errors.Is(err, fs.ErrNotExist) {
		return storage.Stored{}, &state.StoreError{Op: "load", RunID: runID, Err: state.ErrNotFound}
	}
	if err != nil {
		return storage.Stored{}, &state.StoreError{Op: "load", RunID: runID, Err: err}
	}
	version, full, err := state.HeadVersions(head)
	if err != nil || full == 0 {
		return storage.Stored{Head: head}, nil // a whole checkpoint, or an error that says what is wrong
	}
	var (
		context []byte
		items   []state.Piece
	)
	for v := full; v <= version; v++ {
		if err := ctx.Err(); err != nil {
			return storage.Stored{}, err
		}
		data, err := os.ReadFile(filepath.Join(s.saves(runID), strconv.FormatInt(v, 10)))
		if errors.Is(err, fs.ErrNotExist) {
			continue // a save that wrote no items
		}
		if err != nil {
			return storage.Stored{}, &state.StoreError{Op: "load", RunID: runID, Err: err}
		}
		var fsave fileSave
		if err := json.Unmarshal(data, &fsave); err != nil || fsave.Version != v {
			return storage.Stored{}, &state.StoreError{Op: "load", RunID: runID, Err: &state.DecodeError{Path: "$",
				Err: fmt.Errorf("%w: save file %d of the checkpoint is corrupt", state.ErrMalformed, v)}}
		}
		if fsave.Context != nil {
			context = fsave.Context
		}
		for _, p := range fsave.Items {
			items = append(items, state.Piece{Seq: p.Seq, Version: v, Data: p.Data})
		}
	}
	return storage.Stored{Head: head, Context: context, Pieces: items}, nil
}

// Save writes what changed in run if the stored version equals
// run.Version() and sets run's version to the new one; otherwise it
// returns [state.ErrConflict] and changes nothing. The items and context a save
// writes go to a file of their own, named by the new version, and the
// head's atomic rename commits the save: a crash before it leaves a save
// file that Load ignores and the next save of that version replaces.
func (s *Store) Save(ctx context.Context, run *state.Run) error {
	return storage.Save(ctx, backend{s}, run, s.cfg.marshal...)
}

// Write writes d if the stored version is d.Base: the items and context
// to the save file of d.Version, then the head.
func (b backend) Write(ctx context.Context, d *state.Delta) (int64, error) {
	s := b.s
	unlock, err := s.lock()
	if err != nil {
		return 0, &state.StoreError{Op: "save", RunID: d.RunID, Err: err}
	}
	defer unlock()
	path := s.Path(d.RunID)
	cur, full, err := storedVersions(path)
	if err != nil {
		return 0, &state.StoreError{Op: "save", RunID: d.RunID, Err: err}
	}
	if d.Base != cur {
		return 0, &state.StoreError{Op: "save", RunID: d.RunID, Err: state.ErrConflict, Have: d.Base, Stored: cur}
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	ix, err := s.indexAhead(d.Summary, cur > 0)
	if err != nil {
		return 0, &state.StoreError{Op: "save", RunID: d.RunID, Err: fmt.Errorf("index: %w", err)}
	}
	dir := s.saves(d.RunID)
	if len(d.Items) > 0 || d.Context != nil {
		fsave := fileSave{Version: d.Version, Context: d.Context, Items: make([]filePiece, len(d.Items))}
		for i, p := range d.Items {
			fsave.Items[i] = filePiece{Seq: p.Seq, Data: p.Data}
		}
		data, err := json.Marshal(&fsave)
		if err != nil {
			return 0, &state.StoreError{Op: "save", RunID: d.RunID, Err: err}
		}
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return 0, &state.StoreError{Op: "save", RunID: d.RunID, Err: err}
		}
		if err := writeAtomic(filepath.Join(dir, strconv.FormatInt(d.Version, 10)), data); err != nil {
			return 0, &state.StoreError{Op: "save", RunID: d.RunID, Err: err}
		}
	} else {
		// A file of this version left by a save that failed before its
		// commit must not be read as this save's.
		if err := os.Remove(filepath.Join(dir, strconv.FormatInt(d.Version, 10))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, &state.StoreError{Op: "save", RunID: d.RunID, Err: err}
		}
	}
	if err := writeAtomic(path, d.Head); err != nil {
		return 0, &state.StoreError{Op: "save", RunID: d.RunID, Err: err}
	}
	s.settle(ix)
	if d.Full && full > 0 {
		for v := full; v <= cur; v++ { // the saves a full one replaced
			_ = os.Remove(filepath.Join(dir, strconv.FormatInt(v, 10)))
		}
	}
	return d.Version, nil
}

// Delete removes the run's checkpoint; a missing one is not an error.
func (s *Store) Delete(ctx context.Context, runID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	unlock, err := s.lock()
	if err != nil {
		return &state.StoreError{Op: "delete", RunID: runID, Err: err}
	}
	defer unlock()
	if err := os.Remove(s.Path(runID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return &state.StoreError{Op: "delete", RunID: runID, Err: err}
	}
	if err := os.RemoveAll(s.saves(runID)); err != nil {
		return &state.StoreError{Op: "delete", RunID: runID, Err: err}
	}
	s.unindex(runID)
	return nil
}

// Delete removes what the store keeps of the run.
func (b backend) Delete(ctx context.Context, runID string) error { return b.s.Delete(ctx, runID) }

func (s *Store) lock() (unlock func(), err error) {
	s.mu.Lock()
	release, err := lockFile(filepath.Join(s.dir, ".lock"))
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	return func() {
		release()
		s.mu.Unlock()
	}, nil
}

// storedVersions reads the version of the checkpoint at path and the
// version of its last full save; 0, 0 if there is none.
func storedVersions(path string) (version, full int64, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	return state.HeadVersions(data)
}

func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}
