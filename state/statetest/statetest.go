package statetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/state"
)

// TestStore runs the state.Store conformance suite. newStore returns a
// store for one subtest; it may return the same backend each time, since
// every subtest uses run IDs of its own. Register any cleanup on t.
func TestStore(t *testing.T, newStore func(t *testing.T) state.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s state.Store)
	}{
		{"SaveThenLoad", testSaveThenLoad},
		{"SaveSetsVersion", testSaveSetsVersion},
		{"StaleSaveConflicts", testStaleSaveConflicts},
		{"NewSaveOverExistingConflicts", testNewOverExisting},
		{"SaveOfDeletedRunConflicts", testSaveOfDeleted},
		{"LoadMissing", testLoadMissing},
		{"ConcurrentSaversOneWins", testConcurrentSavers},
		{"LoadsAreDetached", testLoadsDetached},
		{"SaveDoesNotKeepCaller", testSaveDetached},
		{"DeleteIsIdempotent", testDelete},
		{"CancelledContext", testCancelled},
		{"DeltaSaves", testDeltaSaves},
		{"ContentParts", testContentParts},
		{"ListRuns", testListRuns},
		{"Elicitation", testElicitation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, newStore(t)) })
	}
}

// SampleRun returns a run with the given ID that uses every part of the
// state: input, history context, a response with reasoning, a message and
// two calls (one answered, one pending approval), an "always" decision, a
// guardrail result, usage, a session, a trace context and an extension.
func SampleRun(tb testing.TB, id string) *state.Run {
	tb.Helper()
	r := state.NewRun(id, "assistant")
	runcore.SetMaxTurns(r, 7)
	if err := runcore.SetHistory(r, []state.Item{state.UserMessage("earlier").WithSeq(3), state.AssistantMessage("m0", "earlier answer").WithSeq(4)}); err != nil {
		tb.Fatal(err)
	}
	runcore.AddInput(r, state.UserMessage("delete the temp files"))
	runcore.SetTurn(r, 2)
	first := runcore.Reserve(r, 6)
	items := []state.Item{
		state.Reasoning("rs_1", "two files to remove"),
		state.AssistantMessage("msg_1", "Removing them now."),
		state.ToolCall("fc_1", "call_ls", "list_files", `{"dir":"/tmp"}`),
		state.ToolCall("fc_2", "call_rm", "delete_file", `{"path":"/tmp/x"}`),
	}
	for i := range items {
		items[i] = items[i].WithSeq(first + int64(i))
	}
	must(tb, runcore.RecordAll(r, items...))
	end := first + int64(len(items))
	runcore.SetResponse(r, state.Boundary{Start: first, End: end, OutputsEnd: end + 2})
	must(tb, runcore.Record(r, state.ToolOutput("call_ls", "list_files", `["x"]`).WithSeq(end)))
	runcore.AddPending(r, state.Approval{Tool: "delete_file", CallID: "call_rm", Arguments: `{"path":"/tmp/x"}`, Agent: "assistant", Seq: first + 3, OutputSeq: end + 1})
	must(tb, r.ApproveAlways("list_files"))
	r.AddGuardrailResult(state.GuardrailResult{Name: "no_secrets", Stage: state.StageInput, Turn: 1, Info: json.RawMessage(`{"score":0.1}`)})
	runcore.AddUsage(r, state.Usage{Requests: 2, InputTokens: 120, OutputTokens: 30, ReasoningTokens: 5, CachedTokens: 7})
	runcore.AddModelCall(r, state.ModelCall{Turn: 1, Agent: "assistant", Model: "gpt-test", ResponseID: "resp_\"1\"", Seq: first,
		Usage: state.Usage{Requests: 1, InputTokens: 60, OutputTokens: 30, ReasoningTokens: 5, CachedTokens: 7}})
	runcore.AddModelCall(r, state.ModelCall{Turn: 2, Agent: "assistant", Usage: state.Usage{Requests: 1, InputTokens: 60}})
	runcore.SetSessionID(r, "session-1")
	runcore.SetSessionWatermark(r, first-1)
	r.SetTraceContext(map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
	r.SetExtension("example.com/counter", json.RawMessage(`{"n":1}`))
	return r
}

// Diff returns a human-readable difference between two runs, comparing
// every part a checkpoint holds except the store version; "" means equal.
func Diff(tb testing.TB, got, want *state.Run) string {
	tb.Helper()
	g, w := got.Clone(), want.Clone()
	runcore.SetVersion(g, 0)
	runcore.SetVersion(w, 0)
	gb, err := state.Marshal(g, state.WithIndent())
	must(tb, err)
	wb, err := state.Marshal(w, state.WithIndent())
	must(tb, err)
	return cmp.Diff(string(wb), string(gb))
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

func newID(t *testing.T) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "statetest-" + hex.EncodeToString(b[:])
}

func save(t *testing.T, s state.Store, r *state.Run) {
	t.Helper()
	if err := s.Save(context.Background(), r); err != nil {
		t.Fatalf("Save(%s at version %d) = %v", r.ID(), r.Version(), err)
	}
}

func load(t *testing.T, s state.Store, id string) *state.Run {
	t.Helper()
	r, err := s.Load(context.Background(), id)
	if err != nil {
		t.Fatalf("Load(%s) = %v", id, err)
	}
	return r
}

func testSaveThenLoad(t *testing.T, s state.Store) {
	want := SampleRun(t, newID(t))
	save(t, s, want)
	got := load(t, s, want.ID())
	if d := Diff(t, got, want); d != "" {
		t.Errorf("Load after Save (-want +got):\n%s", d)
	}
	if got.Version() != want.Version() {
		t.Errorf("loaded version %d, saved run has %d", got.Version(), want.Version())
	}
}

func testSaveSetsVersion(t *testing.T, s state.Store) {
	r := SampleRun(t, newID(t))
	save(t, s, r)
	v1 := r.Version()
	if v1 == 0 {
		t.Fatal("Save left the version at 0")
	}
	save(t, s, r)
	if r.Version() == v1 {
		t.Fatalf("second Save kept version %d", v1)
	}
	if got := load(t, s, r.ID()).Version(); got != r.Version() {
		t.Errorf("Load version = %d, want %d", got, r.Version())
	}
}

func testStaleSaveConflicts(t *testing.T, s state.Store) {
	r := SampleRun(t, newID(t))
	save(t, s, r)
	stale := load(t, s, r.ID())
	must(t, r.Approve("call_rm"))
	save(t, s, r)

	must(t, stale.Reject("call_rm", "no"))
	staleVersion := stale.Version()
	err := s.Save(context.Background(), stale)
	if !errors.Is(err, state.ErrConflict) {
		t.Fatalf("Save(stale) = %v, want ErrConflict", err)
	}
	if stale.Version() != staleVersion {
		t.Errorf("failed Save changed the run's version from %d to %d", staleVersion, stale.Version())
	}
	if d := Diff(t, load(t, s, r.ID()), r); d != "" {
		t.Errorf("a conflicting Save changed the stored run (-want +got):\n%s", d)
	}
}

func testNewOverExisting(t *testing.T, s state.Store) {
	id := newID(t)
	save(t, s, SampleRun(t, id))
	if err := s.Save(context.Background(), SampleRun(t, id)); !errors.Is(err, state.ErrConflict) {
		t.Fatalf("Save(new run over an existing one) = %v, want ErrConflict", err)
	}
}

// testSaveOfDeleted checks that a save based on a stored version whose
// checkpoint was deleted since writes nothing: the run is not stored again
// from a delta that lacks what the deleted saves held.
func testSaveOfDeleted(t *testing.T, s state.Store) {
	ctx := context.Background()
	r := SampleRun(t, newID(t))
	save(t, s, r)
	must(t, s.Delete(ctx, r.ID()))
	must(t, r.Approve("call_rm"))
	version := r.Version()
	if err := s.Save(ctx, r); !errors.Is(err, state.ErrConflict) {
		t.Fatalf("Save(a run deleted since its last save) = %v, want ErrConflict", err)
	}
	if r.Version() != version {
		t.Errorf("failed Save changed the run's version from %d to %d", version, r.Version())
	}
	if _, err := s.Load(ctx, r.ID()); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("Load after a refused save of a deleted run = %v, want ErrNotFound", err)
	}
}

func testLoadMissing(t *testing.T, s state.Store) {
	if _, err := s.Load(context.Background(), newID(t)); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("Load(missing) = %v, want ErrNotFound", err)
	}
}

func testConcurrentSavers(t *testing.T, s state.Store) {
	r := SampleRun(t, newID(t))
	save(t, s, r)
	const n = 8
	copies := make([]*state.Run, n)
	for i := range copies {
		copies[i] = load(t, s, r.ID())
		copies[i].SetExtension("statetest/saver", json.RawMessage(strconv.Itoa(i)))
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range copies {
		wg.Go(func() {
			<-start
			errs[i] = s.Save(context.Background(), copies[i])
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("savers %d and %d both won from one version", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, state.ErrConflict):
			t.Errorf("saver %d: %v, want nil or ErrConflict", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no saver won")
	}
	if d := Diff(t, load(t, s, r.ID()), copies[winner]); d != "" {
		t.Errorf("stored run is not the winner's (-want +got):\n%s", d)
	}
}

func testLoadsDetached(t *testing.T, s state.Store) {
	r := SampleRun(t, newID(t))
	save(t, s, r)
	a, b := load(t, s, r.ID()), load(t, s, r.ID())
	must(t, a.Approve("call_rm"))
	a.SetExtension("example.com/counter", json.RawMessage(`{"n":2}`))
	if got := b.Decisions(); len(got) != 1 {
		t.Errorf("deciding on one loaded copy changed another: decisions %+v", got)
	}
	if d := Diff(t, b, r); d != "" {
		t.Errorf("second load differs from the saved run (-want +got):\n%s", d)
	}
}

func testSaveDetached(t *testing.T, s state.Store) {
	r := SampleRun(t, newID(t))
	save(t, s, r)
	want := r.Clone()
	must(t, r.Approve("call_rm"))
	if d := Diff(t, load(t, s, r.ID()), want); d != "" {
		t.Errorf("changing the run after Save changed the store (-want +got):\n%s", d)
	}
}

func testDelete(t *testing.T, s state.Store) {
	ctx := context.Background()
	r := SampleRun(t, newID(t))
	save(t, s, r)
	for i := range 2 {
		if err := s.Delete(ctx, r.ID()); err != nil {
			t.Fatalf("Delete #%d = %v", i+1, err)
		}
	}
	if _, err := s.Load(ctx, r.ID()); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("Load after Delete = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, newID(t)); err != nil {
		t.Fatalf("Delete(never saved) = %v", err)
	}
	again := SampleRun(t, r.ID())
	save(t, s, again) // a deleted run starts over from version 0
}

func testCancelled(t *testing.T, s state.Store) {
	r := SampleRun(t, newID(t))
	save(t, s, r)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Load(ctx, r.ID()); !errors.Is(err, context.Canceled) {
		t.Errorf("Load(cancelled) = %v, want context.Canceled", err)
	}
	v := r.Version()
	if err := s.Save(ctx, r); !errors.Is(err, context.Canceled) {
		t.Errorf("Save(cancelled) = %v, want context.Canceled", err)
	}
	if r.Version() != v {
		t.Errorf("Save(cancelled) changed the version from %d to %d", v, r.Version())
	}
	if err := s.Delete(ctx, r.ID()); !errors.Is(err, context.Canceled) {
		t.Errorf("Delete(cancelled) = %v, want context.Canceled", err)
	}
	if _, err := s.Load(context.Background(), r.ID()); err != nil {
		t.Errorf("Load after cancelled Delete = %v, want the run", err)
	}
}

// ContentRun returns a run whose input and tool outputs are content parts
// (text, images and files) rather than strings: a user message made with
// [state.UserContent], and a function call and a custom tool call answered
// with [state.ToolOutputContent] and [state.CustomOutputContent].
func ContentRun(tb testing.TB, id string) *state.Run {
	tb.Helper()
	r := state.NewRun(id, "assistant")
	runcore.SetMaxTurns(r, 5)
	runcore.AddInput(r, state.UserContent(state.TextPart("Chart this: "), state.FileID("file-data")))
	runcore.SetTurn(r, 1)
	first := runcore.Reserve(r, 4)
	calls := []state.Item{
		state.ToolCall("fc_1", "call_plot", "plot", `{"kind":"bar"}`).WithSeq(first),
		state.CustomCall("ctc_1", "call_sql", "run_sql", "SELECT 1;").WithSeq(first + 1),
	}
	must(tb, runcore.RecordAll(r, calls...))
	runcore.SetResponse(r, state.Boundary{Start: first, End: first + 2, OutputsEnd: first + 4})
	must(tb, runcore.RecordAll(r,
		state.ToolOutputContent("call_plot", "plot",
			state.TextPart("the chart:"), state.ImageURL("data:image/png;base64,iVBORw0KGgo=", "high"),
			state.ImageFile("file-img", ""), state.FileData("chart.csv", "data:text/csv;base64,YSwx")).WithSeq(first+2),
		state.CustomOutputContent("call_sql", "run_sql", state.TextPart("1 row"), state.FileURL("https://example.com/rows.csv")).WithSeq(first+3),
	))
	return r
}

// testContentParts: items whose content is a list of parts load as they
// were saved, parts and all.
func testContentParts(t *testing.T, s state.Store) {
	r := ContentRun(t, newID(t))
	save(t, s, r)
	got := load(t, s, r.ID())
	if d := Diff(t, got, r); d != "" {
		t.Fatalf("Load differs (-want +got):\n%s", d)
	}
	want := r.Items()
	if got.Items().Len() != want.Len() {
		t.Fatalf("loaded %d items, want %d", got.Items().Len(), want.Len())
	}
	for i, it := range got.Items().All() {
		w := want.At(i)
		if !it.Equal(w) || it.Text() != w.Text() {
			t.Errorf("item %d = %v %s, want %v %s", i, it, it.Raw(), w, w.Raw())
		}
		if d := cmp.Diff(w.Content(), it.Content(), cmp.AllowUnexported(state.ContentPart{})); d != "" {
			t.Errorf("item %d content (-want +got):\n%s", i, d)
		}
	}
}
