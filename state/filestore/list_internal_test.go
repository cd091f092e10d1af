package filestore

import (
	"context"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/statetest"
)

// listIDs returns the IDs and versions the listing q gives, in order.
func listIDs(t *testing.T, s *Store, q state.RunQuery) []state.RunSummary {
	t.Helper()
	page, err := s.ListRuns(context.Background(), q)
	if err != nil {
		t.Fatalf("ListRuns(%+v) = %v", q, err)
	}
	return page.Runs
}

func briefs(sums []state.RunSummary) []string {
	var out []string
	for _, s := range sums {
		out = append(out, s.RunID+"@"+s.Status.String())
	}
	return out
}

// TestIndexCrashSafe: a save or a delete that dies at any step between
// its index writes and its commit leaves a listing that says what the
// checkpoints hold.
func TestIndexCrashSafe(t *testing.T) {
	ctx := context.Background()
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const sid = "s1"
	paused := statetest.RunWithStatus(t, "p", sid, state.RunPaused)
	other := statetest.RunWithStatus(t, "o", sid, state.RunUnfinished)
	for _, r := range []*state.Run{paused, other} {
		if err := s.Save(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	check := func(step string, q state.RunQuery, want ...string) {
		t.Helper()
		if d := cmp.Diff(want, briefs(listIDs(t, s, q))); d != "" {
			t.Errorf("%s: listing %+v (-want +got):\n%s", step, q, d)
		}
	}
	finished := state.RunSummary{RunID: "p", SessionID: sid, Agent: "lister", Turn: 3, Status: state.RunFinished, Version: 2}

	// A save of p as finished dies after its index writes, before the
	// head's rename: p is still paused at version 1.
	ix, err := s.indexAhead(finished, true)
	if err != nil {
		t.Fatal(err)
	}
	check("save died before its commit", state.RunQuery{Status: state.RunFinished, SessionID: sid})
	check("save died before its commit", state.RunQuery{Status: state.RunPaused, SessionID: sid}, "p@paused")
	check("save died before its commit", state.RunQuery{SessionID: sid}, "o@unfinished", "p@paused")
	if got := listIDs(t, s, state.RunQuery{Status: state.RunPaused})[0]; got.Version != 1 || got.Pending != 1 {
		t.Errorf("summary of the run whose save died: version %d, pending %d; want 1, 1", got.Version, got.Pending)
	}

	// The same save commits (the head is renamed) and dies before it
	// removes the list files it no longer needs.
	run, err := s.Load(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	run.SetExtension("x", []byte(`1`))
	// Commit a paused save of version 2 for real, then re-create the
	// list files of the finished summary the dead save wrote: they name
	// the run in lists it is not in.
	if err := s.Save(ctx, run); err != nil {
		t.Fatal(err)
	}
	for _, list := range listsOf(finished) {
		if err := writeAtomic(s.listPath(list, ix.new.Serial), []byte("p")); err != nil {
			t.Fatal(err)
		}
	}
	check("list files left by a dead save", state.RunQuery{Status: state.RunFinished})
	check("list files left by a dead save", state.RunQuery{Status: state.RunPaused, SessionID: sid}, "p@paused")

	// A delete that dies after removing the head, before its index.
	if err := os.Remove(s.Path("o")); err != nil {
		t.Fatal(err)
	}
	check("delete died after its commit", state.RunQuery{SessionID: sid}, "p@paused")

	// A new run's first save dies after its index writes: not listed,
	// and a save of that run then starts at version 0.
	fresh := statetest.RunWithStatus(t, "n", sid, state.RunPaused)
	fd, err := fresh.Delta()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.indexAhead(fd.Summary, false); err != nil {
		t.Fatal(err)
	}
	check("first save died before its commit", state.RunQuery{SessionID: sid}, "p@paused")
	if err := s.Save(ctx, fresh); err != nil {
		t.Fatalf("save after a first save died: %v", err)
	}
	check("after the first save", state.RunQuery{SessionID: sid}, "n@paused", "p@paused")

	// A store opened on the directory again lists the same.
	s2, err := New(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	s = s2
	check("reopened", state.RunQuery{SessionID: sid}, "n@paused", "p@paused")
}

// TestIndexEarlierCheckpoints: a directory saved without the index (by an
// earlier version) is indexed when a store opens it.
func TestIndexEarlierCheckpoints(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*state.Run{
		statetest.RunWithStatus(t, "a", "s", state.RunPaused),
		statetest.RunWithStatus(t, "b", "s", state.RunFinished),
	} {
		if err := s.Save(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(dir + "/" + indexDir); err != nil {
		t.Fatal(err)
	}
	s, err = New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"b@finished", "a@paused"}, briefs(listIDs(t, s, state.RunQuery{SessionID: "s"}))); d != "" {
		t.Errorf("listing after indexing (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"a@paused"}, briefs(listIDs(t, s, state.RunQuery{Status: state.RunPaused}))); d != "" {
		t.Errorf("paused after indexing (-want +got):\n%s", d)
	}
}
