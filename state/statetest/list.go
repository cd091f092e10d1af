package statetest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/state"
)

// RunWithStatus returns a run with the given ID, of the session sid (none
// if ""), in the given status: paused on one call of the tool "refund"
// with the call ID "call_"+id, finished with the output "done", or
// unfinished; at turn 2 of the agent "lister", with a user message as
// input.
func RunWithStatus(tb testing.TB, id, sid string, status state.RunStatus) *state.Run {
	tb.Helper()
	r := state.NewRun(id, "lister")
	runcore.SetTurn(r, 2)
	if sid != "" {
		runcore.SetSessionID(r, sid)
	}
	runcore.AddInput(r, state.UserMessage("hello"))
	switch status {
	case state.RunPaused:
		seq := runcore.Reserve(r, 2)
		must(tb, runcore.Record(r, state.ToolCall("fc_"+id, "call_"+id, "refund", `{"amount":5}`).WithSeq(seq)))
		runcore.SetResponse(r, state.Boundary{Start: seq, End: seq + 1, OutputsEnd: seq + 2})
		runcore.AddPending(r, state.Approval{Tool: "refund", CallID: "call_" + id, Arguments: `{"amount":5}`,
			Agent: "lister", Seq: seq, OutputSeq: seq + 1})
	case state.RunFinished:
		runcore.Finish(r, "done")
	}
	if got := r.Status(); got != status {
		tb.Fatalf("run %s: status %v, want %v", id, got, status)
	}
	return r
}

// listAll pages through the listing q selects with pages of size limit and
// returns the runs in the order listed, failing on a page larger than
// limit or a run listed twice.
func listAll(t *testing.T, l state.Lister, q state.RunQuery, limit int) []state.RunSummary {
	t.Helper()
	q.Limit = limit
	var all []state.RunSummary
	seen := map[string]bool{}
	for pages := 0; ; pages++ {
		page, err := l.ListRuns(context.Background(), q)
		if err != nil {
			t.Fatalf("ListRuns(%+v) = %v", q, err)
		}
		if len(page.Runs) > limit {
			t.Fatalf("ListRuns(%+v): %d runs on a page of %d", q, len(page.Runs), limit)
		}
		for _, r := range page.Runs {
			if seen[r.RunID] {
				t.Fatalf("ListRuns(%+v): run %s listed twice", q, r.RunID)
			}
			seen[r.RunID] = true
		}
		all = append(all, page.Runs...)
		if page.Next == "" {
			return all
		}
		if len(page.Runs) == 0 {
			t.Fatalf("ListRuns(%+v): an empty page with a next cursor", q)
		}
		q.Cursor = page.Next
	}
}

// ids returns the run IDs of sums that are in want, in order.
func ids(sums []state.RunSummary, want ...string) []string {
	var out []string
	for _, s := range sums {
		if slices.Contains(want, s.RunID) {
			out = append(out, s.RunID)
		}
	}
	return out
}

// testListRuns checks a store's [state.Lister]: pages newest first by the
// first save, filters by status and by session, a run moving between
// statuses, a full save and a delete, and a bad cursor.
func testListRuns(t *testing.T, s state.Store) {
	l, ok := s.(state.Lister)
	if !ok {
		t.Skipf("%T does not implement state.Lister", s)
	}
	f := newListFixture(t, s, l)
	f.checkPages()
	f.checkByStatus()
	f.checkMoves()
	f.checkStaleSave()
	f.checkDelete()
	f.checkBadCursor()
}

// A listFixture is a store holding five runs of one session in various
// statuses (idsOf, oldest first), a paused run of another session
// (elsewhere) and a paused run of none (loose).
type listFixture struct {
	t                *testing.T
	s                state.Store
	l                state.Lister
	sid, other       string
	idsOf            []string
	elsewhere, loose *state.Run
}

// newListFixture saves the fixture's runs in s.
func newListFixture(t *testing.T, s state.Store, l state.Lister) *listFixture {
	f := &listFixture{t: t, s: s, l: l, sid: newID(t), other: newID(t)}
	statuses := []state.RunStatus{state.RunUnfinished, state.RunPaused, state.RunFinished, state.RunPaused, state.RunUnfinished}
	for i, st := range statuses {
		r := RunWithStatus(t, newID(t)+"-"+string(rune('a'+i)), f.sid, st)
		save(t, s, r)
		f.idsOf = append(f.idsOf, r.ID())
	}
	f.elsewhere = RunWithStatus(t, newID(t)+"-other", f.other, state.RunPaused)
	save(t, s, f.elsewhere)
	f.loose = RunWithStatus(t, newID(t)+"-loose", "", state.RunPaused)
	save(t, s, f.loose)
	return f
}

// newestFirst returns the IDs of the session's runs idx, in that order.
func (f *listFixture) newestFirst(idx ...int) []string {
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = f.idsOf[j]
	}
	return out
}

// all returns the IDs of every run of the fixture.
func (f *listFixture) all() []string {
	return append(slices.Clone(f.idsOf), f.elsewhere.ID(), f.loose.ID())
}

// byStatus lists the fixture's runs in status st (0: any) of the session
// (all sessions if ""), in pages of limit.
func (f *listFixture) byStatus(st state.RunStatus, sessionID string, limit int) []string {
	return ids(listAll(f.t, f.l, state.RunQuery{Status: st, SessionID: sessionID}, limit), f.all()...)
}

// checkPages lists the session's runs, newest first, at every page size,
// and checks a summary.
func (f *listFixture) checkPages() {
	t := f.t
	for _, limit := range []int{1, 2, 5, 50} {
		got := listAll(t, f.l, state.RunQuery{SessionID: f.sid}, limit)
		if d := cmp.Diff(f.newestFirst(4, 3, 2, 1, 0), ids(got, f.all()...)); d != "" {
			t.Errorf("session listing, pages of %d (-want +got):\n%s", limit, d)
		}
	}
	page, err := f.l.ListRuns(context.Background(), state.RunQuery{SessionID: f.sid, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if page.Next != "" {
		t.Errorf("a page holding the last run has next cursor %q, want none", page.Next)
	}
	want := state.RunSummary{RunID: f.idsOf[1], SessionID: f.sid, Agent: "lister", Turn: 2,
		Status: state.RunPaused, Pending: 1, Version: 1}
	if len(page.Runs) != 5 {
		t.Fatalf("session listing: %d runs, want 5", len(page.Runs))
	}
	if d := cmp.Diff(want, page.Runs[3]); d != "" {
		t.Errorf("summary of a paused run (-want +got):\n%s", d)
	}
}

// checkByStatus lists by status, in the session and across sessions.
func (f *listFixture) checkByStatus() {
	for _, tt := range []struct {
		status  state.RunStatus
		session string
		want    []string
	}{
		{state.RunPaused, f.sid, f.newestFirst(3, 1)},
		{state.RunUnfinished, f.sid, f.newestFirst(4, 0)},
		{state.RunFinished, f.sid, f.newestFirst(2)},
		{state.RunPaused, f.other, []string{f.elsewhere.ID()}},
		{state.RunPaused, "", []string{f.loose.ID(), f.elsewhere.ID(), f.idsOf[3], f.idsOf[1]}},
		{0, "", []string{f.loose.ID(), f.elsewhere.ID(), f.idsOf[4], f.idsOf[3], f.idsOf[2], f.idsOf[1], f.idsOf[0]}},
	} {
		for _, limit := range []int{1, 3} {
			if d := cmp.Diff(tt.want, f.byStatus(tt.status, tt.session, limit)); d != "" {
				f.t.Errorf("status %v, session %q, pages of %d (-want +got):\n%s", tt.status, tt.session, limit, d)
			}
		}
	}
}

// checkMoves decides the paused run b, which finishes: it moves to
// finished and keeps its place, its first save. Then a full save (a
// checkpoint file saved back) of run a keeps its place too.
func (f *listFixture) checkMoves() {
	t, s, idsOf := f.t, f.s, f.idsOf
	b := load(t, s, idsOf[1])
	must(t, b.Approve("call_"+idsOf[1]))
	must(t, runcore.Record(b, state.ToolOutput("call_"+idsOf[1], "refund", "ok").WithSeq(b.Pending()[0].OutputSeq)))
	runcore.ResolvePending(b, "call_"+idsOf[1])
	runcore.Finish(b, "refunded")
	save(t, s, b)
	if d := cmp.Diff(f.newestFirst(3), f.byStatus(state.RunPaused, f.sid, 2)); d != "" {
		t.Errorf("paused after b finished (-want +got):\n%s", d)
	}
	if d := cmp.Diff(f.newestFirst(2, 1), f.byStatus(state.RunFinished, f.sid, 1)); d != "" {
		t.Errorf("finished after b finished (-want +got):\n%s", d)
	}
	data, err := state.Marshal(load(t, s, idsOf[0]))
	if err != nil {
		t.Fatal(err)
	}
	a, err := state.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	runcore.SetTurn(a, 3)
	save(t, s, a)
	got := listAll(t, f.l, state.RunQuery{SessionID: f.sid}, 10)
	if d := cmp.Diff(f.newestFirst(4, 3, 2, 1, 0), ids(got, idsOf...)); d != "" {
		t.Errorf("after a full save (-want +got):\n%s", d)
	}
	if last := got[len(got)-1]; last.Turn != 3 || last.Version != 2 {
		t.Errorf("summary after a full save: turn %d, version %d; want 3, 2", last.Turn, last.Version)
	}
}

// checkStaleSave checks that a save that loses the compare-and-swap
// changes no listing.
func (f *listFixture) checkStaleSave() {
	t, s, id := f.t, f.s, f.idsOf[4]
	stale, fresh := load(t, s, id), load(t, s, id)
	runcore.SetTurn(fresh, 5)
	save(t, s, fresh)
	runcore.Finish(stale, "late")
	if err := s.Save(context.Background(), stale); !errors.Is(err, state.ErrConflict) {
		t.Fatalf("Save(stale) = %v, want ErrConflict", err)
	}
	if d := cmp.Diff(f.newestFirst(2, 1), f.byStatus(state.RunFinished, f.sid, 5)); d != "" {
		t.Errorf("finished after a stale save (-want +got):\n%s", d)
	}
	if got := listAll(t, f.l, state.RunQuery{SessionID: f.sid, Status: state.RunUnfinished}, 5); len(got) == 0 || got[0].RunID != id || got[0].Turn != 5 {
		t.Errorf("unfinished after a stale save: %+v, want %s at turn 5 first", got, id)
	}
}

// checkDelete checks that a deleted run leaves every list.
func (f *listFixture) checkDelete() {
	t := f.t
	if err := f.s.Delete(context.Background(), f.idsOf[3]); err != nil {
		t.Fatal(err)
	}
	if got := f.byStatus(state.RunPaused, f.sid, 2); len(got) != 0 {
		t.Errorf("paused after the delete: %q, want none", got)
	}
	if d := cmp.Diff(f.newestFirst(4, 2, 1, 0), f.byStatus(0, f.sid, 2)); d != "" {
		t.Errorf("session after the delete (-want +got):\n%s", d)
	}
}

// checkBadCursor lists with cursors no listing returned, and with a
// cancelled context.
func (f *listFixture) checkBadCursor() {
	t, ctx := f.t, context.Background()
	for _, c := range []string{"nonsense", "r", "r-1", "r0", "s1"} {
		_, err := f.l.ListRuns(ctx, state.RunQuery{Cursor: c})
		var ce *state.CursorError
		if !errors.Is(err, state.ErrCursor) || !errors.As(err, &ce) || ce.Cursor != c {
			t.Errorf("ListRuns(cursor %q) = %v, want a *state.CursorError", c, err)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := f.l.ListRuns(cancelled, state.RunQuery{}); !errors.Is(err, context.Canceled) {
		t.Errorf("ListRuns(cancelled context) = %v, want context.Canceled", err)
	}
}
