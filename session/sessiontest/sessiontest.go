package sessiontest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// TestStore runs the session.Store conformance suite against the stores
// newStore returns. newStore is called once per subtest and must return a
// usable store; it should register its own cleanup with t.Cleanup. Closing
// the store is part of one subtest (UseAfterClose), so a cleanup that closes
// it again must tolerate a second Close.
//
// Subtests run sequentially; the concurrency subtests start their own
// goroutines and wait for them before returning.
func TestStore(t *testing.T, newStore func(t *testing.T) session.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s session.Store)
	}{
		{"EmptySession", testEmptySession},
		{"AppendAndList", testAppendAndList},
		{"AppendKeepsNoSlice", testAppendKeepsNoSlice},
		{"LateCommitKeepsOrder", testLateCommit},
		{"RunPlaceFixedAtFirstAppend", testRunPlaceFixed},
		{"RetryIsIdempotent", testRetryIdempotent},
		{"OverlappingBatches", testOverlappingBatches},
		{"ConflictRejectsWholeBatch", testConflict},
		{"ConflictWithinBatch", testConflictWithinBatch},
		{"SecondOutputRefused", testSecondOutput},
		{"HeldBackCallIsNotLatest", testHeldBackCall},
		{"InvalidAppend", testInvalid},
		{"Limit", testLimit},
		{"ListBefore", testListBefore},
		{"ListBeforeStamp", testListBeforeStamp},
		{"StampsGoOnAfterClear", testStampsAfterClear},
		{"Changes", testChanges},
		{"Pop", testPop},
		{"PopThenReappend", testPopThenReappend},
		{"Clear", testClear},
		{"SessionsAreIsolated", testIsolation},
		{"Lookup", testLookup},
		{"ConcurrentRuns", testConcurrentRuns},
		{"ConcurrentSameRun", testConcurrentSameRun},
		{"LargeItem", testLargeItem},
		{"UnicodeItems", testUnicode},
		{"ContentParts", testContentParts},
		{"ListSessions", testListSessions},
		{"ListPage", testListPage},
		{"CancelledContext", testCancelled},
		{"UseAfterClose", testClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, newStore(t)) })
	}
}

var sessionCounter atomic.Int64

// newSessionID returns a session ID unique to this process and call, so
// that subtests sharing one database never see each other's items.
func newSessionID(t *testing.T) string {
	return fmt.Sprintf("%s@%x.%d", t.Name(), time.Now().UnixNano(), sessionCounter.Add(1))
}

func ctx(t *testing.T) context.Context { return t.Context() }

// item returns a deterministic item of run at seq; the kind cycles through
// messages, reasoning, calls and outputs so that every kind round-trips.
func item(run string, seq int64) state.Item {
	tag := fmt.Sprintf("%s#%d", run, seq)
	var it state.Item
	switch seq % 5 {
	case 1:
		it = state.UserMessage(tag)
	case 2:
		it = state.Reasoning("rs_"+tag, tag)
	case 3:
		it = state.ToolCall("fc_"+tag, "call_"+tag, "lookup", `{"q":"`+tag+`"}`)
	case 4:
		it = state.ToolOutput("call_"+tag, "lookup", "out "+tag)
	default:
		it = state.AssistantMessage("msg_"+tag, tag)
	}
	return it.WithSeq(seq)
}

// items returns item(run, seq) for each seq.
func items(run string, seqs ...int64) []state.Item {
	out := make([]state.Item, len(seqs))
	for i, s := range seqs {
		out[i] = item(run, s)
	}
	return out
}

func span(from, to int64) []int64 {
	var s []int64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

// view is a comparable picture of an item for diffs.
type view struct {
	Seq    int64
	Kind   string
	CallID string
	Name   string
	Text   string
	Raw    string
}

func views(its []state.Item) []view {
	out := make([]view, len(its))
	for i, it := range its {
		out[i] = view{it.Seq(), it.Kind().String(), it.CallID(), it.Name(), it.Text(), string(it.Raw())}
	}
	return out
}

func concat(parts ...[]state.Item) []state.Item {
	var out []state.Item
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func mustAppend(t *testing.T, s session.Store, sid, run string, its []state.Item) {
	t.Helper()
	if err := s.Append(ctx(t), sid, run, its); err != nil {
		t.Fatalf("Append(%q, %q, %v) = %v", sid, run, its, err)
	}
}

func list(t *testing.T, s session.Store, sid string, limit int) []state.Item {
	t.Helper()
	got, err := s.List(ctx(t), sid, limit)
	if err != nil {
		t.Fatalf("List(%q, %d) = %v", sid, limit, err)
	}
	return got
}

func wantList(t *testing.T, s session.Store, sid string, limit int, want []state.Item) {
	t.Helper()
	got := list(t, s, sid, limit)
	if diff := cmp.Diff(views(want), views(got)); diff != "" {
		t.Fatalf("List(%q, %d) mismatch (-want +got):\n%s", sid, limit, diff)
	}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Fatalf("List(%q, %d)[%d] = %v, not Equal to %v", sid, limit, i, got[i], want[i])
		}
	}
}

func testEmptySession(t *testing.T, s session.Store) {
	sid := newSessionID(t)
	wantList(t, s, sid, 0, nil)
	wantList(t, s, sid, 3, nil)
	if it, ok, err := s.Pop(ctx(t), sid); err != nil || ok {
		t.Fatalf("Pop(empty) = %v, %v, %v; want zero, false, nil", it, ok, err)
	}
	if it, ok, err := s.Lookup(ctx(t), sid, "run", 1); err != nil || ok {
		t.Fatalf("Lookup(empty) = %v, %v, %v; want zero, false, nil", it, ok, err)
	}
	if err := s.Clear(ctx(t), sid); err != nil {
		t.Fatalf("Clear(empty) = %v", err)
	}
	if err := s.Append(ctx(t), sid, "run", nil); err != nil {
		t.Fatalf("Append(no items) = %v", err)
	}
	wantList(t, s, sid, 0, nil)
}

func testAppendAndList(t *testing.T, s session.Store) {
	sid := newSessionID(t)
	mustAppend(t, s, sid, "a", items("a", 1, 2, 3))
	mustAppend(t, s, sid, "a", items("a", 4, 5, 6))
	wantList(t, s, sid, 0, items("a", span(1, 6)...))
	wantList(t, s, sid, -1, items("a", span(1, 6)...))
}

// testAppendKeepsNoSlice reuses an appended batch's slice for the next
// batch, as the persistence middleware does: Append keeps no reference to
// it, so what the first append stored stays as it was.
func testAppendKeepsNoSlice(t *testing.T, s session.Store) {
	sid := newSessionID(t)
	batch := items("a", 1, 2, 3)
	mustAppend(t, s, sid, "a", batch)
	copy(batch, items("a", 4, 5, 6))
	mustAppend(t, s, sid, "a", batch)
	copy(batch, items("b", 1, 2, 3)) // the second batch's slice too
	wantList(t, s, sid, 0, items("a", span(1, 6)...))
}

// testLateCommit interleaves two runs whose items are committed out of Seq
// order (a final message held back until the output guardrails passed): each
// still lands at its original position.
func testLateCommit(t *testing.T, s session.Store) {
	sid := newSessionID(t)
	mustAppend(t, s, sid, "a", items("a", 1, 2, 4)) // a's place: first
	mustAppend(t, s, sid, "b", items("b", 1, 2))    // b's place: second
	mustAppend(t, s, sid, "a", items("a", 3))       // late: seq 3 after seq 4
	mustAppend(t, s, sid, "b", items("b", 4))
	mustAppend(t, s, sid, "a", items("a", 6, 5)) // out of order within a batch
	mustAppend(t, s, sid, "b", items("b", 3))
	wantList(t, s, sid, 0, concat(items("a", 1, 2, 3, 4, 5, 6), items("b", 1, 2, 3, 4)))
}

// testRunPlaceFixed checks that a run's place is taken by its first append,
// whatever Seq that append carries, and kept for its later appends.
func testRunPlaceFixed(t *testing.T, s session.Store) {
	sid := newSessionID(t)
	mustAppend(t, s, sid, "a", items("a", 5))
	mustAppend(t, s, sid, "b", items("b", 1))
	mustAppend(t, s, sid, "c", items("c", 2))
	mustAppend(t, s, sid, "a", items("a", 1, 2, 3, 4))
	mustAppend(t, s, sid, "c", items("c", 1))
	mustAppend(t, s, sid, "b", items("b", 2))
	wantList(t, s, sid, 0, concat(items("a", 1, 2, 3, 4, 5), items("b", 1, 2), items("c", 1, 2)))
}

func testRetryIdempotent(t *testing.T, s session.Store) {
	sid := newSessionID(t)
	batch := items("a", 1, 2, 3)
	for i := range 3 {
		if err := s.Append(ctx(t), sid, "a", batch); err != nil {
			t.Fatalf("Append #%d of the same batch = %v, want nil", i+1, err)
		}
	}
	// A retry built from a fresh copy of the items (a resumed run rebuilds
	// them from a checkpoint) is the same append.
	rebuilt := make([]state.Item, len(batch))
	for i, it := range batch {
		p, err := state.ParseItem(it.Kind(), it.Raw())
		if err != nil {
			t.Fatal(err)
		}
		rebuilt[i] = p.WithSeq(it.Seq()).WithName(it.Name())
	}
	mustAppend(t, s, sid, "a", rebuilt)
	wantList(t, s, sid, 0, batch)
}

func testOverlappingBatches(t *testing.T, s session.Store) {
	sid := newSessionID(t)
	mustAppend(t, s, sid, "a", items("a", 1, 2))
	mustAppend(t, s, sid, "a", items("a", 2, 3, 4))
	mustAppend(t, s, sid, "a", items("a", 1, 4, 5))
	mustAppend(t, s, sid, "a", items("a", 3))
	mustAppend(t, s, sid, "a", items("a", 5, 5, 6)) // a duplicate inside one batch
	wantList(t, s, sid, 0, items("a", span(1, 6)...))
}

func testConflict(t *testing.T, s session.Store) {
	sid := newSessionID(t)
	mustAppend(t, s, sid, "a", items("a", 1, 2))
	before := list(t, s, sid, 0)

	tests := []struct {
		name  string
		batch []state.Item
	}{
		{"different text", []state.Item{item("a", 3), state.UserMessage("not the stored one").WithSeq(1)}},
		{"different kind", []state.Item{state.SystemMessage("a#1").WithSeq(1), item("a", 4)}},
		{"different name", []state.Item{item("a", 5), item("a", 2).WithName("other")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Append(ctx(t), sid, "a", tt.batch)
			if !errors.Is(err, session.ErrConflict) {
				t.Fatalf("Append(%v) = %v, want ErrConflict", tt.batch, err)
			}
			wantList(t, s, sid, 0, before) // the new items of the batch were not written
		})
	}
	// The store still accepts good appends afterwards.
	mustAppend(t, s, sid, "a", items("a", 2, 3))
	wantList(t, s, sid, 0, items("a", 1, 2, 3))
}

func testConflictWithinBatch(t *testing.T, s session.Store) {
	sid := newSessionID(t)
	batch := []state.Item{item("a", 1), item("a", 2), state.UserMessage("other").WithSeq(2)}
	if err := s.Append(ctx(t), sid, "a", batch); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("Append(two items at seq 2) = %v, want ErrConflict", err)
	}
	wantList(t, s, sid, 0, nil)
	// A rejected first append does not fix the run's place.
	mustAppend(t, s, sid, "b", items("b", 1))
	mustAppend(t, s, sid, "a", items("a", 1))
	wantList(t, s, sid, 0, concat(items("b", 1), items("a", 1)))
}

// testSecondOutput checks that a call gets at most one output, in one
// batch or across batches, of either output kind, while a call ID reused
// by a later call is that call's own, and a retried append of the output
// at its own position is still a no-op (issue 13).
func testSecondOutput(t *testing.T, s session.Store) {
	sid := newSessionID(t)
	call := func(seq int64) state.Item {
		return state.ToolCall(fmt.Sprintf("fc_%d", seq), "call_1", "lookup", fmt.Sprintf(`{"n":%d}`, seq)).WithSeq(seq)
	}
	output := func(seq int64) state.Item {
		return state.ToolOutput("call_1", "lookup", fmt.Sprint("out ", seq)).WithSeq(seq)
	}
	first := []state.Item{item("a", 1), call(2), output(3)}
	mustAppend(t, s, sid, "a", first)
	mustAppend(t, s, sid, "a", first) // a retry
	mustAppend(t, s, sid, "a", []state.Item{output(3)})

	refused := func(name string, batch []state.Item) {
		t.Helper()
		before := list(t, s, sid, 0)
		if err := s.Append(ctx(t), sid, "a", batch); !errors.Is(err, session.ErrDuplicateOutput) {
			t.Fatalf("%s: Append(%v) = %v, want ErrDuplicateOutput", name, batch, err)
		}
		wantList(t, s, sid, 0, before) // nothing of the batch was written
	}
	refused("second output", []state.Item{item("a", 4), output(5)})
	refused("second handoff output", []state.Item{state.HandoffOutput("call_1", "lookup", "again").WithSeq(5)})
	refused("two outputs in one batch", []state.Item{call(6), output(7), output(8)})

	// The model reuses the call ID in a later response: a call of its own,
	// answered once, in one batch or the next.
	mustAppend(t, s, sid, "a", []state.Item{call(6), output(7)})
	mustAppend(t, s, sid, "a", []state.Item{call(8)})
	mustAppend(t, s, sid, "a", []state.Item{output(9)})
	refused("second output of the reused ID", []state.Item{output(10)})
	// Another run of the session may use the same call ID.
	mustAppend(t, s, sid, "b", []state.Item{call(2), output(3)})
	// A late commit of an earlier position does not change the pairing.
	mustAppend(t, s, sid, "a", []state.Item{item("a", 4)})
	wantList(t, s, sid, 0, concat(
		[]state.Item{item("a", 1), call(2), output(3), item("a", 4), call(6), output(7), call(8), output(9)},
		[]state.Item{call(2), output(3)},
	))

	// An output answers the latest call with its ID before it: in a batch
	// with a gap, a call stored in the gap, not the batch's own.
	sid = newSessionID(t)
	mustAppend(t, s, sid, "a", []state.Item{item("a", 1), call(3)})
	mustAppend(t, s, sid, "a", []state.Item{call(2), output(4)})
	refused("second output of the call in the gap", []state.Item{output(5)})
	wantList(t, s, sid, 0, []state.Item{item("a", 1), call(2), call(3), output(4)})

	// A popped output no longer answers its call.
	sid = newSessionID(t)
	mustAppend(t, s, sid, "a", []state.Item{call(1), output(2)})
	if it, ok, err := s.Pop(ctx(t), sid); err != nil || !ok || it.Seq() != 2 {
		t.Fatalf("Pop = %v, %v, %v; want the output", it, ok, err)
	}
	mustAppend(t, s, sid, "a", []state.Item{output(3)})
	wantList(t, s, sid, 0, []state.Item{call(1), output(3)})
}

func testInvalid(t *testing.T, s session.Store) {
	sid := newSessionID(t)
	tests := []struct {
		name  string
		sid   string
		run   string
		batch []state.Item
	}{
		{"empty session ID", "", "a", items("a", 1)},
		{"empty run ID", sid, "", items("a", 1)},
		{"zero seq", sid, "a", []state.Item{item("a", 1), state.UserMessage("x")}},
		{"negative seq", sid, "a", []state.Item{item("a", 1), state.UserMessage("x").WithSeq(-2)}},
		{"zero item", sid, "a", []state.Item{item("a", 1), state.Item{}.WithSeq(2)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.Append(ctx(t), tt.sid, tt.run, tt.batch); !errors.Is(err, session.ErrInvalid) {
				t.Fatalf("Append(%q, %q, %v) = %v, want ErrInvalid", tt.sid, tt.run, tt.batch, err)
			}
			wantList(t, s, sid, 0, nil)
		})
	}
}

func testLimit(t *testing.T, s session.Store) {
	sid := newSessionID(t)
	mustAppend(t, s, sid, "a", items("a", 1, 2, 4))
	mustAppend(t, s, sid, "b", items("b", 1, 2))
	mustAppend(t, s, sid, "a", items("a", 3))
	all := concat(items("a", 1, 2, 3, 4), items("b", 1, 2))
	tests := []struct {
		limit int
		want  []state.Item
	}{
		{0, all},
		{-5, all},
		{1, all[5:]},
		{3, all[3:]},
		{6, all},
		{100, all},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint("limit=", tt.limit), func(t *testing.T) {
			wantList(t, s, sid, tt.limit, tt.want)
		})
	}
}

// testListBefore reads the items placed before a run: the history it
// started from, which a checkpoint refers to.
func testListBefore(t *testing.T, s session.Store) {
	sid := newSessionID(t)
	mustAppend(t, s, sid, "a", items("a", 1, 2, 4))
	mustAppend(t, s, sid, "b", items("b", 1, 2))
	mustAppend(t, s, sid, "c", items("c", 1, 2, 3))
	mustAppend(t, s, sid, "a", items("a", 3)) // late, but before b
	a := items("a", 1, 2, 3, 4)
	ab := concat(a, items("b", 1, 2))
	all := concat(ab, items("c", 1, 2, 3))
	tests := []struct {
		run   string
		limit int
		want  []state.Item
	}{
		{"a", 0, nil},
		{"a", 3, nil},
		{"b", 0, a},
		{"b", 2, a[2:]},
		{"c", 0, ab},
		{"c", -1, ab},
		{"c", 1, ab[5:]},
		{"c", 100, ab},
		{"new", 0, all}, // a run with nothing stored: after every run
		{"new", 4, all[5:]},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/limit=%d", tt.run, tt.limit), func(t *testing.T) {
			got, err := s.ListBefore(ctx(t), sid, tt.run, session.HistoryQuery{Limit: tt.limit})
			if err != nil {
				t.Fatalf("ListBefore(%q, %d) = %v", tt.run, tt.limit, err)
			}
			if diff := cmp.Diff(views(tt.want), views(got.Items)); diff != "" {
				t.Fatalf("ListBefore(%q, %d) mismatch (-want +got):\n%s", tt.run, tt.limit, diff)
			}
		})
	}
	if got, err := s.ListBefore(ctx(t), newSessionID(t), "a", session.HistoryQuery{}); err != nil || len(got.Items) != 0 {
		t.Fatalf("ListBefore(unknown session) = %v, %v; want none, nil", got, err)
	}
	// A pop of the session's last item leaves what lies before later runs.
	if _, ok, err := s.Pop(ctx(t), sid); err != nil || !ok {
		t.Fatalf("Pop = %v, %v", ok, err)
	}
	got, err := s.ListBefore(ctx(t), sid, "c", session.HistoryQuery{})
	if err != nil {
		t.Fatalf("ListBefore after Pop = %v", err)
	}
	if diff := cmp.Diff(views(ab), views(got.Items)); diff != "" {
		t.Fatalf("ListBefore after Pop mismatch (-want +got):\n%s", diff)
	}
}

// listBefore reads ListBefore or fails the test.
func listBefore(t *testing.T, s session.Store, sid, run string, q session.HistoryQuery) session.History {
	t.Helper()
	h, err := s.ListBefore(ctx(t), sid, run, q)
	if err != nil {
		t.Fatalf("ListBefore(%q, %+v) = %v", run, q, err)
	}
	return h
}

// testListBeforeStamp reads a run's history again, by the stamp read with
// it, after an earlier run of the session went on: the earlier run's new
// items sort before the run's own place, but were written after the
// stamp, so the history read again is the one read first.
func testListBeforeStamp(t *testing.T, s session.Store) {
	sid := newSessionID(t)
	mustAppend(t, s, sid, "a", items("a", 1, 2))
	mustAppend(t, s, sid, "b", items("b", 1))
	// Run c reads its history, then stores its first items.
	first := listBefore(t, s, sid, "c", session.HistoryQuery{Limit: 2})
	want := concat(items("a", 2), items("b", 1))
	if diff := cmp.Diff(views(want), views(first.Items)); diff != "" {
		t.Fatalf("history of c mismatch (-want +got):\n%s", diff)
	}
	if first.Stamp < 1 {
		t.Fatalf("History.Stamp = %d, want at least 1", first.Stamp)
	}
	mustAppend(t, s, sid, "c", items("c", 1))
	// Earlier runs go on (a paused run approved later): their items sort
	// before c's.
	mustAppend(t, s, sid, "a", items("a", 3, 4))
	mustAppend(t, s, sid, "b", items("b", 2))
	mustAppend(t, s, sid, "d", items("d", 1))
	moved := listBefore(t, s, sid, "c", session.HistoryQuery{Limit: 2})
	if diff := cmp.Diff(views(items("b", 1, 2)), views(moved.Items)); diff != "" {
		t.Fatalf("history of c without the stamp mismatch (-want +got):\n%s", diff)
	}
	if moved.Stamp <= first.Stamp {
		t.Fatalf("History.Stamp after more writes = %d, want above %d", moved.Stamp, first.Stamp)
	}
	again := listBefore(t, s, sid, "c", session.HistoryQuery{Limit: 2, Stamp: first.Stamp})
	if diff := cmp.Diff(views(want), views(again.Items)); diff != "" {
		t.Fatalf("history of c at its stamp mismatch (-want +got):\n%s", diff)
	}
	all := listBefore(t, s, sid, "c", session.HistoryQuery{Stamp: first.Stamp})
	if diff := cmp.Diff(views(concat(items("a", 1, 2), items("b", 1))), views(all.Items)); diff != "" {
		t.Fatalf("whole history of c at its stamp mismatch (-want +got):\n%s", diff)
	}
	// A run with nothing stored reads, at a stamp, what was written before it.
	mid := listBefore(t, s, sid, "new", session.HistoryQuery{Stamp: first.Stamp})
	if diff := cmp.Diff(views(all.Items), views(mid.Items)); diff != "" {
		t.Fatalf("history of a new run at c's stamp mismatch (-want +got):\n%s", diff)
	}
	// An item of the history popped is gone from it: fewer items, never others.
	for range 2 { // d's item, then c's
		if _, ok, err := s.Pop(ctx(t), sid); err != nil || !ok {
			t.Fatalf("Pop = %v, %v", ok, err)
		}
	}
	popped := listBefore(t, s, sid, "new", session.HistoryQuery{Stamp: first.Stamp})
	if diff := cmp.Diff(views(all.Items), views(popped.Items)); diff != "" {
		t.Fatalf("history at c's stamp after popping later items mismatch (-want +got):\n%s", diff)
	}
}

// testStampsAfterClear checks that a session's stamps only go up: after
// a pop or a clear, new items still get stamps after every one read.
func testStampsAfterClear(t *testing.T, s session.Store) {
	sid := newSessionID(t)
	mustAppend(t, s, sid, "a", items("a", 1, 2))
	before := listBefore(t, s, sid, "x", session.HistoryQuery{})
	if _, ok, err := s.Pop(ctx(t), sid); err != nil || !ok {
		t.Fatalf("Pop = %v, %v", ok, err)
	}
	mustAppend(t, s, sid, "b", items("b", 1))
	if got := listBefore(t, s, sid, "x", session.HistoryQuery{Stamp: before.Stamp}); len(got.Items) != 1 || !got.Items[0].Equal(items("a", 1)[0]) {
		t.Fatalf("items before stamp %d after a pop and an append: %v, want a's first", before.Stamp, views(got.Items))
	}
	if err := s.Clear(ctx(t), sid); err != nil {
		t.Fatalf("Clear = %v", err)
	}
	mustAppend(t, s, sid, "c", items("c", 1, 2, 3))
	if got := listBefore(t, s, sid, "x", session.HistoryQuery{Stamp: before.Stamp}); len(got.Items) != 0 {
		t.Fatalf("items before stamp %d after a clear: %v, want none", before.Stamp, views(got.Items))
	}
	if got := listBefore(t, s, sid, "x", session.HistoryQuery{}); len(got.Items) != 3 || got.Stamp <= before.Stamp {
		t.Fatalf("after a clear: %d items at stamp %d, want 3 at a stamp above %d", len(got.Items), got.Stamp, before.Stamp)
	}
}

func testPop(t *testing.T, s session.Store) {
	sid := newSessionID(t)
	mustAppend(t, s, sid, "a", items("a", 1, 3))
	mustAppend(t, s, sid, "b", items("b", 1))
	mustAppend(t, s, sid, "a", items("a", 2)) // late, but not last
	for _, want := range []state.Item{item("b", 1), item("a", 3), item("a", 2), item("a", 1)} {
		got, ok, err := s.Pop(ctx(t), sid)
		if err != nil || !ok || !got.Equal(want) {
			t.Fatalf("Pop = %v, %v, %v; want %v, true, nil", got, ok, err, want)
		}
	}
	if got, ok, err := s.Pop(ctx(t), sid); err != nil || ok {
		t.Fatalf("Pop(emptied) = %v, %v, %v; want zero, false, nil", got, ok, err)
	}
	wantList(t, s, sid, 0, nil)
}

// testPopThenReappend checks that a popped position can be written again
// and that the run keeps its place.
func testPopThenReappend(t *testing.T, s session.Store) {
	sid := newSessionID(t)
	mustAppend(t, s, sid, "a", items("a", 1, 2))
	mustAppend(t, s, sid, "b", items("b", 1))
	if _, ok, err := s.Pop(ctx(t), sid); err != nil || !ok {
		t.Fatalf("Pop = %v, %v", ok, err)
	}
	if _, ok, err := s.Lookup(ctx(t), sid, "b", 1); err != nil || ok {
		t.Fatalf("Lookup(popped) = %v, %v; want false, nil", ok, err)
	}
	mustAppend(t, s, sid, "a", items("a", 3))
	mustAppend(t, s, sid, "b", []state.Item{state.UserMessage("replacement").WithSeq(1)})
	wantList(t, s, sid, 0, concat(items("a", 1, 2, 3), []state.Item{state.UserMessage("replacement").WithSeq(1)}))
}

func testClear(t *testing.T, s session.Store) {
	sid, other := newSessionID(t), newSessionID(t)
	mustAppend(t, s, sid, "a", items("a", 1, 2, 3))
	mustAppend(t, s, other, "a", items("a", 1))
	if err := s.Clear(ctx(t), sid); err != nil {
		t.Fatalf("Clear = %v", err)
	}
	wantList(t, s, sid, 0, nil)
	if _, ok, err := s.Lookup(ctx(t), sid, "a", 2); err != nil || ok {
		t.Fatalf("Lookup(cleared) = %v, %v; want false, nil", ok, err)
	}
	wantList(t, s, other, 0, items("a", 1))
	// A cleared session starts afresh: new items, even at old positions.
	mustAppend(t, s, sid, "b", items("b", 1))
	mustAppend(t, s, sid, "a", []state.Item{state.UserMessage("new").WithSeq(1)})
	wantList(t, s, sid, 0, concat(items("b", 1), []state.Item{state.UserMessage("new").WithSeq(1)}))
}

func testIsolation(t *testing.T, s session.Store) {
	s1, s2 := newSessionID(t), newSessionID(t)
	// The same run ID and positions in two sessions are different items.
	mustAppend(t, s, s1, "r", items("r", 1, 2))
	other := []state.Item{state.UserMessage("elsewhere").WithSeq(1)}
	mustAppend(t, s, s2, "r", other)
	mustAppend(t, s, s2, "q", items("q", 1))
	wantList(t, s, s1, 0, items("r", 1, 2))
	wantList(t, s, s2, 0, concat(other, items("q", 1)))
	if _, ok, err := s.Lookup(ctx(t), s1, "q", 1); err != nil || ok {
		t.Fatalf("Lookup(other session's run) = %v, %v; want false, nil", ok, err)
	}
	if _, ok, err := s.Pop(ctx(t), s2); err != nil || !ok {
		t.Fatalf("Pop = %v, %v", ok, err)
	}
	wantList(t, s, s1, 0, items("r", 1, 2))
	// A prefix of another session ID is another session.
	wantList(t, s, s1[:len(s1)-1], 0, nil)
}

func testLookup(t *testing.T, s session.Store) {
	sid := newSessionID(t)
	mustAppend(t, s, sid, "a", items("a", 1, 2, 4))
	mustAppend(t, s, sid, "b", items("b", 1))
	tests := []struct {
		name   string
		run    string
		seq    int64
		want   state.Item
		wantOK bool
	}{
		{"message", "a", 1, item("a", 1), true},
		{"output", "a", 4, item("a", 4), true},
		{"other run", "b", 1, item("b", 1), true},
		{"gap", "a", 3, state.Item{}, false},
		{"past the end", "a", 5, state.Item{}, false},
		{"unknown run", "c", 1, state.Item{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := s.Lookup(ctx(t), sid, tt.run, tt.seq)
			if err != nil || ok != tt.wantOK || (ok && !got.Equal(tt.want)) {
				t.Fatalf("Lookup(%q, %d) = %v, %v, %v; want %v, %v, nil", tt.run, tt.seq, got, ok, err, tt.want, tt.wantOK)
			}
			if ok && got.Text() != tt.want.Text() {
				t.Fatalf("Lookup(%q, %d).Text() = %q, want %q", tt.run, tt.seq, got.Text(), tt.want.Text())
			}
		})
	}
}

// testConcurrentRuns appends the items of many runs from many goroutines.
// Each run's items must form one block in Seq order; blocks follow each
// other in some order.
func testConcurrentRuns(t *testing.T, s session.Store) {
	const runs, perRun, batch = 8, 12, 3
	sid := newSessionID(t)
	var wg sync.WaitGroup
	for r := range runs {
		run := fmt.Sprintf("run%d", r)
		wg.Go(func() {
			// Commit batches late and out of order: the last batch first.
			for b := perRun/batch - 1; b >= 0; b-- {
				seqs := span(int64(b*batch+1), int64(b*batch+batch))
				if err := s.Append(ctx(t), sid, run, items(run, seqs...)); err != nil {
					t.Errorf("Append(%s, %v) = %v", run, seqs, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	got := list(t, s, sid, 0)
	if len(got) != runs*perRun {
		t.Fatalf("List returned %d items, want %d", len(got), runs*perRun)
	}
	var want []state.Item
	for i := 0; i < len(got); i += perRun {
		run, _, _ := strings.Cut(got[i].Text(), "#")
		want = append(want, items(run, span(1, perRun)...)...)
	}
	wantList(t, s, sid, 0, want)
	seen := map[string]bool{}
	for i := 0; i < len(want); i += perRun {
		run, _, _ := strings.Cut(want[i].Text(), "#")
		if seen[run] {
			t.Fatalf("run %s appears in two blocks", run)
		}
		seen[run] = true
	}
}

// testConcurrentSameRun retries overlapping batches of one run from many
// goroutines at once, as workers racing after an ambiguous failure would.
func testConcurrentSameRun(t *testing.T, s session.Store) {
	const workers, n = 8, 15
	sid := newSessionID(t)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			size := int64(w%4 + 1)
			for from := int64(1); from <= n; from += size {
				seqs := span(from, min(from+size, n))
				if err := s.Append(ctx(t), sid, "run", items("run", seqs...)); err != nil {
					t.Errorf("worker %d: Append(%v) = %v", w, seqs, err)
					return
				}
			}
		})
	}
	// Another run races for its place at the same time.
	wg.Go(func() {
		if err := s.Append(ctx(t), sid, "other", items("other", 1)); err != nil {
			t.Errorf("Append(other) = %v", err)
		}
	})
	wg.Wait()
	if t.Failed() {
		return
	}
	got := list(t, s, sid, 0)
	runs := items("run", span(1, n)...)
	other := items("other", 1)
	want := concat(runs, other)
	if len(got) > 0 && got[0].Equal(other[0]) {
		want = concat(other, runs)
	}
	wantList(t, s, sid, 0, want)
}

func testLargeItem(t *testing.T, s session.Store) {
	sid := newSessionID(t)
	big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
	its := []state.Item{
		state.UserMessage("before").WithSeq(1),
		state.ToolOutput("call_big", "dump", big).WithSeq(2),
		state.AssistantMessage("msg_after", "after").WithSeq(3),
	}
	mustAppend(t, s, sid, "a", its)
	mustAppend(t, s, sid, "a", its) // the retry compares 1 MiB, and is a no-op
	got := list(t, s, sid, 0)
	if len(got) != 3 {
		t.Fatalf("List returned %d items, want 3", len(got))
	}
	for i := range its {
		if !got[i].Equal(its[i]) || got[i].Text() != its[i].Text() {
			t.Fatalf("List[%d] = %v (%d bytes), want %v (%d bytes)", i, got[i], got[i].RawLen(), its[i], its[i].RawLen())
		}
	}
	l, ok, err := s.Lookup(ctx(t), sid, "a", 2)
	if err != nil || !ok || l.Text() != big {
		t.Fatalf("Lookup(big) = %d bytes, %v, %v; want %d bytes", len(l.Text()), ok, err, len(big))
	}
}

func testUnicode(t *testing.T, s session.Store) {
	sid := newSessionID(t)
	texts := []string{
		"emoji 👩‍👩‍👧‍👦 🇯🇵 ✅",
		"RTL: שלום עולם / مرحبا بالعالم \u200f",
		"escaped NUL a\x00b and controls \x01\x1f\t\n",
		`quotes "' backslash \ and </script>`,
		"combining e\u0301 and BOM \ufeff",
	}
	var its []state.Item
	for i, txt := range texts {
		seq := int64(2*i + 1)
		its = append(its,
			state.UserMessage(txt).WithSeq(seq),
			state.ToolCall("fc_"+txt, "call_"+txt, "tool_✓", `{"s":"`+strings.ReplaceAll(txt, "\x00", `\u0000`)+`"}`).WithSeq(seq+1))
	}
	for _, it := range its {
		if strings.ContainsRune(string(it.Raw()), 0) {
			t.Fatalf("test bug: raw JSON of %v holds a NUL byte", it)
		}
	}
	mustAppend(t, s, sid, "ünï-😀", its)
	wantList(t, s, sid, 0, its)
	got, ok, err := s.Lookup(ctx(t), sid, "ünï-😀", 5)
	if err != nil || !ok || got.Text() != texts[2] {
		t.Fatalf("Lookup = %q, %v, %v; want %q", got.Text(), ok, err, texts[2])
	}
	// Unicode session IDs are sessions like any other.
	uni := sid + "/会话-🗂"
	mustAppend(t, s, uni, "r", items("r", 1))
	wantList(t, s, uni, 0, items("r", 1))
	wantList(t, s, sid, 0, its)
}

// testContentParts: messages and tool outputs whose content is a list of
// parts (text, images, files) round-trip byte for byte, parts and all, and
// such an output still answers its call once.
func testContentParts(t *testing.T, s session.Store) {
	sid := newSessionID(t)
	image := state.ImageURL("data:image/png;base64,iVBORw0KGgo=", "high")
	output := func(seq int64, text string) state.Item {
		return state.ToolOutputContent("call_plot", "plot", state.TextPart(text), image, state.FileData("a.csv", "data:text/csv;base64,YSwx")).WithSeq(seq)
	}
	its := []state.Item{
		state.UserContent(state.TextPart("plot this "), state.FileID("file-1"), state.ImageFile("file-2", "low")).WithSeq(1),
		state.ToolCall("fc_1", "call_plot", "plot", `{}`).WithSeq(2),
		state.CustomCall("ctc_1", "call_sql", "run_sql", "SELECT 1;").WithSeq(3),
		output(4, "the chart \u2028 ✓"),
		state.CustomOutputContent("call_sql", "run_sql", state.TextPart("1 row"), state.FileURL("https://example.com/r.csv")).WithSeq(5),
	}
	mustAppend(t, s, sid, "a", its)
	mustAppend(t, s, sid, "a", its[3:]) // a retry
	wantList(t, s, sid, 0, its)
	for i, it := range list(t, s, sid, 0) {
		if diff := cmp.Diff(its[i].Content(), it.Content(), cmp.AllowUnexported(state.ContentPart{})); diff != "" {
			t.Errorf("List()[%d].Content() mismatch (-want +got):\n%s", i, diff)
		}
	}
	got, ok, err := s.Lookup(ctx(t), sid, "a", 4)
	if err != nil || !ok || !got.Equal(its[3]) || len(got.Content()) != 3 {
		t.Fatalf("Lookup(4) = %v %s, %v, %v; want %s", got, got.Raw(), ok, err, its[3].Raw())
	}
	for name, batch := range map[string][]state.Item{
		"second content output": {output(6, "again")},
		"second text output":    {state.ToolOutput("call_plot", "plot", "again").WithSeq(6)},
	} {
		if err := s.Append(ctx(t), sid, "a", batch); !errors.Is(err, session.ErrDuplicateOutput) {
			t.Fatalf("%s: Append = %v, want ErrDuplicateOutput", name, err)
		}
	}
	wantList(t, s, sid, 0, its)
}

// testHeldBackCall checks that a call committed late, at a position
// before a later call of the same ID already stored (a message held back
// until the output guardrails passed, or a retried append), does not
// become the call that outputs after both answer: the output at 6 answers
// the call at 4, the latest before it, so a second output is refused; and
// an output between the two calls answers the earlier one. (session/redis's
// append script skips the lookup of stored calls when an output's call is
// in its batch, but only when that call is placed after the run's stored
// items: this case fails without that condition.)
func testHeldBackCall(t *testing.T, s session.Store) {
	sid := newSessionID(t)
	call := func(seq int64) state.Item {
		return state.ToolCall(fmt.Sprintf("fc_%d", seq), "x", "echo", `{}`).WithSeq(seq)
	}
	output := func(seq int64) state.Item { return state.ToolOutput("x", "echo", fmt.Sprint("out ", seq)).WithSeq(seq) }
	mustAppend(t, s, sid, "a", []state.Item{call(4), state.AssistantMessage("m", "wait").WithSeq(5)})
	mustAppend(t, s, sid, "a", []state.Item{call(2), output(6)})
	before := list(t, s, sid, 0)
	if err := s.Append(ctx(t), sid, "a", []state.Item{output(7)}); !errors.Is(err, session.ErrDuplicateOutput) {
		t.Fatalf("a second output of the call at seq 4: Append = %v, want ErrDuplicateOutput", err)
	}
	wantList(t, s, sid, 0, before)
	mustAppend(t, s, sid, "a", []state.Item{output(3)})
	wantList(t, s, sid, 0, []state.Item{call(2), output(3), call(4), state.AssistantMessage("m", "wait").WithSeq(5), output(6)})
}

func testCancelled(t *testing.T, s session.Store) {
	sid := newSessionID(t)
	mustAppend(t, s, sid, "a", items("a", 1))
	cctx, cancel := context.WithCancel(ctx(t))
	cancel()
	if err := s.Append(cctx, sid, "a", items("a", 2, 3)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append(cancelled) = %v, want context.Canceled", err)
	}
	if err := s.Append(cctx, sid, "b", items("b", 1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append(cancelled, new run) = %v, want context.Canceled", err)
	}
	if _, err := s.List(cctx, sid, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("List(cancelled) = %v, want context.Canceled", err)
	}
	if _, _, err := s.Lookup(cctx, sid, "a", 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lookup(cancelled) = %v, want context.Canceled", err)
	}
	if _, _, err := s.Pop(cctx, sid); !errors.Is(err, context.Canceled) {
		t.Fatalf("Pop(cancelled) = %v, want context.Canceled", err)
	}
	if err := s.Clear(cctx, sid); !errors.Is(err, context.Canceled) {
		t.Fatalf("Clear(cancelled) = %v, want context.Canceled", err)
	}
	dctx, cancel := context.WithDeadline(ctx(t), time.Now().Add(-time.Second))
	defer cancel()
	if err := s.Append(dctx, sid, "a", items("a", 2)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Append(past deadline) = %v, want context.DeadlineExceeded", err)
	}
	// Nothing was written, and b took no place: c comes right after a.
	mustAppend(t, s, sid, "c", items("c", 1))
	wantList(t, s, sid, 0, concat(items("a", 1), items("c", 1)))
}

func testClosed(t *testing.T, s session.Store) {
	sid := newSessionID(t)
	mustAppend(t, s, sid, "a", items("a", 1))
	if err := s.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if _, err := s.List(ctx(t), sid, 0); !errors.Is(err, session.ErrClosed) {
		t.Errorf("List after Close = %v, want ErrClosed", err)
	}
	if err := s.Append(ctx(t), sid, "a", items("a", 2)); !errors.Is(err, session.ErrClosed) {
		t.Errorf("Append after Close = %v, want ErrClosed", err)
	}
	if _, _, err := s.Lookup(ctx(t), sid, "a", 1); !errors.Is(err, session.ErrClosed) {
		t.Errorf("Lookup after Close = %v, want ErrClosed", err)
	}
	if _, _, err := s.Pop(ctx(t), sid); !errors.Is(err, session.ErrClosed) {
		t.Errorf("Pop after Close = %v, want ErrClosed", err)
	}
	if err := s.Clear(ctx(t), sid); !errors.Is(err, session.ErrClosed) {
		t.Errorf("Clear after Close = %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil && !errors.Is(err, session.ErrClosed) {
		t.Errorf("second Close = %v, want nil or ErrClosed", err)
	}
}
