package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// A FileStore is a [Store] that keeps one JSON file per run in a
// directory, named after the run ID (escaped) with ".json". A save writes a
// temporary file, syncs it and renames it over the old one, so a reader or
// a crash sees the old checkpoint or the new one, never a mix. The
// compare-and-swap runs under a lock held by this process and, on Unix, an
// advisory file lock on the directory's ".lock" file, so several processes
// may share the directory. It is safe for concurrent use.
type FileStore struct {
	dir string
	cfg storeConfig
	mu  sync.Mutex
}

var _ Store = (*FileStore)(nil)

// NewFileStore returns a store in dir, creating the directory if needed.
func NewFileStore(dir string, opts ...StoreOption) (*FileStore, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("state: file store: %w", err)
	}
	return &FileStore{dir: dir, cfg: newStoreConfig(opts)}, nil
}

// Path returns the file that holds the run's checkpoint.
func (s *FileStore) Path(runID string) string {
	name := url.PathEscape(runID)
	if strings.HasPrefix(name, ".") {
		name = "%2E" + name[1:]
	}
	return filepath.Join(s.dir, name+".json")
}

// Load reads the run's checkpoint, or returns [ErrNotFound].
func (s *FileStore) Load(ctx context.Context, runID string) (*Run, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if runID == "" {
		return nil, &StoreError{Op: "load", RunID: runID, Err: ErrNotFound}
	}
	data, err := os.ReadFile(s.Path(runID))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &StoreError{Op: "load", RunID: runID, Err: ErrNotFound}
	}
	if err != nil {
		return nil, &StoreError{Op: "load", RunID: runID, Err: err}
	}
	return s.cfg.decode(data)
}

// Save writes run if the stored version equals run.Version() and sets run's
// version to the new one; otherwise it returns [ErrConflict] and changes
// nothing.
func (s *FileStore) Save(ctx context.Context, run *Run) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if run == nil || run.ID() == "" {
		return errors.New("state: save: nil run or empty run ID")
	}
	unlock, err := s.lock()
	if err != nil {
		return &StoreError{Op: "save", RunID: run.ID(), Err: err}
	}
	defer unlock()
	path := s.Path(run.ID())
	cur, err := storedVersion(path)
	if err != nil {
		return &StoreError{Op: "save", RunID: run.ID(), Err: err}
	}
	if have := run.Version(); have != cur {
		return &StoreError{Op: "save", RunID: run.ID(), Err: ErrConflict, Have: have, Stored: cur}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := s.cfg.encode(run, cur+1)
	if err != nil {
		return err
	}
	if err := writeAtomic(path, data); err != nil {
		return &StoreError{Op: "save", RunID: run.ID(), Err: err}
	}
	run.SetVersion(cur + 1)
	return nil
}

// Delete removes the run's checkpoint; a missing one is not an error.
func (s *FileStore) Delete(ctx context.Context, runID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	unlock, err := s.lock()
	if err != nil {
		return &StoreError{Op: "delete", RunID: runID, Err: err}
	}
	defer unlock()
	if err := os.Remove(s.Path(runID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return &StoreError{Op: "delete", RunID: runID, Err: err}
	}
	return nil
}

func (s *FileStore) lock() (unlock func(), err error) {
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

// storedVersion reads the version of the checkpoint at path, 0 if none.
func storedVersion(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var v struct {
		Run struct {
			Version int64 `json:"version"`
		} `json:"run"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return 0, &DecodeError{Path: "$", Err: fmt.Errorf("%w: stored checkpoint %s: %w", ErrMalformed, path, err)}
	}
	return v.Run.Version, nil
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
