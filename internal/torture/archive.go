package torture

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/turnkit/turnkit/state"
)

// An Archive is where the harness keeps the checkpoints of finished runs
// that the checkpointer's retention deletes: an append-only file of
// [state.Marshal] documents, one JSON line each, written with one write
// and synced before the delete. The checks read a run from it when its
// checkpoint is gone, and a [Worker] takes an archived run to be done.
// Several processes may append to one file; a line cut short by a kill
// is skipped on reading (its delete never ran).
type Archive struct {
	mu   sync.Mutex
	f    *os.File
	runs map[string]bool // archived, by this process or before it opened
}

// archiveRecord is one line of an archive.
type archiveRecord struct {
	Run        string `json:"run"`
	Checkpoint []byte `json:"checkpoint"`
}

// ArchivePath returns the path of the backend's archive.
func (b Backend) ArchivePath() string { return filepath.Join(b.Dir, "archive.log") }

// OpenArchive opens (creating it if needed) the archive at path for
// appending, knowing the runs already in it.
func OpenArchive(path string) (*Archive, error) {
	runs, err := ReadArchive(path)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("torture: open archive: %w", err)
	}
	a := &Archive{f: f, runs: make(map[string]bool, len(runs))}
	for id := range runs {
		a.runs[id] = true
	}
	return a, nil
}

// Close closes the archive.
func (a *Archive) Close() error { return a.f.Close() }

// Has reports whether the run is archived.
func (a *Archive) Has(runID string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.runs[runID]
}

// record appends run's checkpoint and syncs.
func (a *Archive) record(run *state.Run) error {
	doc, err := state.Marshal(run)
	if err != nil {
		return fmt.Errorf("torture: archive run %s: %w", run.ID(), err)
	}
	line, err := json.Marshal(archiveRecord{Run: run.ID(), Checkpoint: doc})
	if err != nil {
		return fmt.Errorf("torture: archive run %s: %w", run.ID(), err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("torture: archive run %s: %w", run.ID(), err)
	}
	if err := a.f.Sync(); err != nil {
		return fmt.Errorf("torture: archive run %s: %w", run.ID(), err)
	}
	a.runs[run.ID()] = true
	return nil
}

// ReadArchive reads the runs archived at path, by ID (the last record of
// a run archived twice: a kill between its record and its delete). A
// record cut short by a kill is skipped, as [ReadEffectLog] skips one. A
// missing file holds no runs.
func ReadArchive(path string) (map[string]*state.Run, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]*state.Run{}, nil
	}
	if err != nil {
		return nil, err
	}
	runs := make(map[string]*state.Run)
	lines := bytes.Split(data, []byte("\n"))
	for i, line := range lines[:len(lines)-1] { // the last one has no newline: cut short, or empty
		var rec archiveRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			at := bytes.LastIndex(line, []byte(`{"run":`))
			if at <= 0 || json.Unmarshal(line[at:], &rec) != nil {
				return nil, fmt.Errorf("torture: archive %s line %d: %w", path, i+1, err)
			}
		}
		run, err := state.Unmarshal(rec.Checkpoint)
		if err != nil {
			return nil, fmt.Errorf("torture: archive %s line %d (run %s): %w", path, i+1, rec.Run, err)
		}
		runs[rec.Run] = run
	}
	return runs, nil
}
