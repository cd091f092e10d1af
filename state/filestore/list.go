package filestore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/turnkit/turnkit/state"
)

// The listing's index ([state.Lister]) lives in the directory ".runs":
//
//	.runs/serial                  the last serial given to a run
//	.runs/id/NAME                 a run's entry: its serial and summary
//	.runs/list/LIST/SERIAL        one file per run in a list, holding its ID
//
// NAME is the head's file name without ".json"; SERIAL is the run's
// serial in 19 digits, so that a directory's names sort in serial order;
// LIST names one list: "all", "all-S" (status S), "session-H" and
// "session-H-S" (H: a digest of the session ID). A save writes the entry
// of its new summary, and the list files it needs, before the head's
// rename commits it, and removes the list files it no longer needs after:
// a save that dies half-way leaves list files that the entry does not
// name, or an entry of a version the head has not reached, and a listing
// checks both against the entry and the head, so it never reports what
// the checkpoint does not hold (it reads the run itself when the entry is
// ahead of the head).
const (
	indexDir    = ".runs"
	serialFile  = "serial"
	entryDir    = "id"
	listsDir    = "list"
	indexFormat = 1
)

// An indexEntry is a run's entry in the index.
type indexEntry struct {
	Format  int         `json:"format"`
	Serial  int64       `json:"serial"`
	Summary summaryJSON `json:"summary"`
}

type summaryJSON struct {
	RunID     string `json:"run_id"`
	SessionID string `json:"session_id,omitempty"`
	Agent     string `json:"agent"`
	Turn      int    `json:"turn"`
	Status    string `json:"status"`
	Pending   int    `json:"pending"`
	Version   int64  `json:"version"`
}

func toJSON(s state.RunSummary) summaryJSON {
	return summaryJSON{RunID: s.RunID, SessionID: s.SessionID, Agent: s.Agent, Turn: s.Turn,
		Status: s.Status.String(), Pending: s.Pending, Version: s.Version}
}

func (j summaryJSON) summary() (state.RunSummary, bool) {
	st, ok := state.ParseRunStatus(j.Status)
	return state.RunSummary{RunID: j.RunID, SessionID: j.SessionID, Agent: j.Agent, Turn: j.Turn,
		Status: st, Pending: j.Pending, Version: j.Version}, ok
}

// summaryOf is what a listing says of run as loaded.
func summaryOf(run *state.Run) state.RunSummary {
	return state.RunSummary{RunID: run.ID(), SessionID: run.SessionID(), Agent: run.Agent(), Turn: run.Turn(),
		Status: run.Status(), Pending: len(run.Pending()), Version: run.Version()}
}

// listName names the list of runs of session sid ("": every session) with
// status st (0: every status).
func listName(sid string, st state.RunStatus) string {
	name := "all"
	if sid != "" {
		h := sha256.Sum256([]byte(sid))
		name = "session-" + hex.EncodeToString(h[:16])
	}
	if st != 0 {
		name += "-" + strconv.Itoa(int(st))
	}
	return name
}

// listsOf returns the lists a run with summary sum is in.
func listsOf(sum state.RunSummary) []string {
	lists := []string{listName("", 0), listName("", sum.Status)}
	if sum.SessionID != "" {
		lists = append(lists, listName(sum.SessionID, 0), listName(sum.SessionID, sum.Status))
	}
	return lists
}

func serialName(serial int64) string { return fmt.Sprintf("%019d", serial) }

func (s *Store) entryPath(runID string) string {
	return filepath.Join(s.dir, indexDir, entryDir, strings.TrimSuffix(filepath.Base(s.Path(runID)), ".json"))
}

func (s *Store) listPath(list string, serial int64) string {
	return filepath.Join(s.dir, indexDir, listsDir, list, serialName(serial))
}

// readEntry reads the run's index entry; ok is false if it has none.
func (s *Store) readEntry(runID string) (e indexEntry, ok bool, err error) {
	data, err := os.ReadFile(s.entryPath(runID))
	if errors.Is(err, fs.ErrNotExist) {
		return indexEntry{}, false, nil
	}
	if err != nil {
		return indexEntry{}, false, err
	}
	if err := json.Unmarshal(data, &e); err != nil || e.Format != indexFormat || e.Summary.RunID != runID {
		return indexEntry{}, false, nil // written by no save of this run: as if absent
	}
	return e, true, nil
}

// nextSerial numbers a run saved for the first time. The lock is held.
func (s *Store) nextSerial() (int64, error) {
	path := filepath.Join(s.dir, indexDir, serialFile)
	var last int64
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if last, err = strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err != nil {
			return 0, fmt.Errorf("index serial file %s: %w", path, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return 0, err
	}
	last++
	if err := writeAtomic(path, []byte(strconv.FormatInt(last, 10))); err != nil {
		return 0, err
	}
	return last, nil
}

// A pendingIndex is a save's change to the index, made in two steps
// around the head's rename.
type pendingIndex struct {
	old, new indexEntry
	hadOld   bool
}

// indexAhead writes the entry and list files of the run's new summary,
// before the save commits. stored says whether a head is stored (a run
// saved before, not deleted); a run without one gets a new serial. The
// lock is held.
func (s *Store) indexAhead(sum state.RunSummary, stored bool) (pendingIndex, error) {
	var p pendingIndex
	old, ok, err := s.readEntry(sum.RunID)
	if err != nil {
		return p, err
	}
	p.old, p.hadOld = old, ok
	serial := old.Serial
	if !ok || !stored {
		if serial, err = s.nextSerial(); err != nil {
			return p, err
		}
	}
	p.new = indexEntry{Format: indexFormat, Serial: serial, Summary: toJSON(sum)}
	for _, list := range listsOf(sum) {
		path := s.listPath(list, serial)
		if _, err := os.Stat(path); err == nil {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			return p, err
		}
		if err := writeAtomic(path, []byte(sum.RunID)); err != nil {
			return p, err
		}
	}
	data, err := json.Marshal(&p.new)
	if err != nil {
		return p, err
	}
	if err := os.MkdirAll(filepath.Dir(s.entryPath(sum.RunID)), 0o750); err != nil {
		return p, err
	}
	return p, writeAtomic(s.entryPath(sum.RunID), data)
}

// settle removes the list files the committed save no longer needs. A
// file left behind by a failure here is one listings skip. The lock is
// held.
func (s *Store) settle(p pendingIndex) {
	if !p.hadOld {
		return
	}
	keep := map[string]bool{}
	if p.new.Serial == p.old.Serial {
		if sum, ok := p.new.Summary.summary(); ok {
			for _, list := range listsOf(sum) {
				keep[list] = true
			}
		}
	}
	if sum, ok := p.old.Summary.summary(); ok {
		for _, list := range listsOf(sum) {
			if !keep[list] {
				_ = os.Remove(s.listPath(list, p.old.Serial))
			}
		}
	}
}

// unindex removes a deleted run's entry and list files. The lock is held.
func (s *Store) unindex(runID string) {
	e, ok, err := s.readEntry(runID)
	if err != nil || !ok {
		return
	}
	if sum, ok := e.Summary.summary(); ok {
		for _, list := range listsOf(sum) {
			_ = os.Remove(s.listPath(list, e.Serial))
		}
	}
	_ = os.Remove(s.entryPath(runID))
}

// ListRuns returns a page of the stored runs, newest first by their first
// save, filtered by q's status and session (see [state.Lister]). It reads
// the names in the directory of the list q names, then for each run on the
// page its index entry and its head's version: O(the list's names) and
// O(the page) small files, never the checkpoints' items. A cursor that no
// listing returned fails with a [*state.CursorError].
func (s *Store) ListRuns(ctx context.Context, q state.RunQuery) (state.RunPage, error) {
	if err := ctx.Err(); err != nil {
		return state.RunPage{}, err
	}
	before, err := q.Before()
	if err != nil {
		return state.RunPage{}, err
	}
	n := q.PageSize()
	list := listName(q.SessionID, q.Status)
	names, err := readNames(filepath.Join(s.dir, indexDir, listsDir, list))
	if err != nil {
		return state.RunPage{}, &state.StoreError{Op: "list", Err: err}
	}
	end, _ := slices.BinarySearch(names, serialName(before))
	var page state.RunPage
	i := end - 1
	for ; i >= 0 && len(page.Runs) < n; i-- {
		if err := ctx.Err(); err != nil {
			return state.RunPage{}, err
		}
		serial, err := strconv.ParseInt(names[i], 10, 64)
		if err != nil || serial <= 0 {
			continue // not a list file
		}
		sum, ok, err := s.listed(ctx, list, names[i], serial)
		if err != nil {
			return state.RunPage{}, &state.StoreError{Op: "list", Err: err}
		}
		if ok {
			page.Runs = append(page.Runs, sum)
			page.Next = state.RunCursor(serial)
		}
	}
	if i < 0 || len(page.Runs) < n {
		page.Next = ""
	}
	return page, nil
}

// readNames returns the sorted names in dir, none if it does not exist.
func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

// listed returns the summary of the run a list file names, if the run is
// stored and in that list as of its last committed save.
func (s *Store) listed(ctx context.Context, list, name string, serial int64) (state.RunSummary, bool, error) {
	data, err := os.ReadFile(filepath.Join(s.dir, indexDir, listsDir, list, name))
	if errors.Is(err, fs.ErrNotExist) {
		return state.RunSummary{}, false, nil // removed since the directory was read
	}
	if err != nil {
		return state.RunSummary{}, false, err
	}
	runID := string(data)
	e, ok, err := s.readEntry(runID)
	if err != nil || !ok || e.Serial != serial {
		return state.RunSummary{}, false, err
	}
	sum, ok := e.Summary.summary()
	if !ok {
		return state.RunSummary{}, false, nil
	}
	version, _, err := storedVersions(s.Path(runID))
	switch {
	case err != nil:
		return state.RunSummary{}, false, nil // a head no save wrote: Load says what is wrong
	case version == 0:
		return state.RunSummary{}, false, nil // not saved yet, or deleted
	case version != sum.Version:
		// The entry of a save that did not commit: the run says what
		// it is.
		run, err := s.Load(ctx, runID)
		if err != nil {
			return state.RunSummary{}, false, nil
		}
		sum = summaryOf(run)
	}
	return sum, slices.Contains(listsOf(sum), list), nil
}

// indexEarlier indexes the checkpoints of a directory that has no index
// yet (saved by an earlier version), in the order of their names, once:
// the serial file marks the index as built. The lock is held while it
// runs.
func (s *Store) indexEarlier() error {
	if _, err := os.Stat(filepath.Join(s.dir, indexDir, serialFile)); err == nil {
		return nil
	}
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(s.dir, indexDir, serialFile)); err == nil {
		return nil // another process built it
	}
	names, err := readNames(s.dir)
	if err != nil {
		return err
	}
	for _, name := range names {
		id, ok := strings.CutSuffix(name, ".json")
		if !ok || strings.HasPrefix(name, ".") {
			continue
		}
		runID, err := url.PathUnescape(id)
		if err != nil || s.Path(runID) != filepath.Join(s.dir, name) {
			continue
		}
		run, err := s.Load(context.Background(), runID)
		if err != nil {
			continue // not a checkpoint this store can read: Load says why when asked
		}
		if _, err := s.indexAhead(summaryOf(run), true); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(s.dir, indexDir, serialFile)); err == nil {
		return nil
	}
	return writeAtomic(filepath.Join(s.dir, indexDir, serialFile), []byte("0"))
}
