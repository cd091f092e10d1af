// Package ckpttest checks what the database-backed stores do with the rows
// of a checkpoint saved as deltas (see [state.Delta]): rows edited, removed
// or added behind the store's back are refused, whole checkpoints of the
// earlier row format load and take deltas, a save writes O(its new items),
// and SaveAppend commits the checkpoint and the session append together.
// The conformance of the stores' API is [statetest]'s and [sessiontest]'s.
package ckpttest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/statetest"
)

// A Store keeps sessions and checkpoints, and saves both in one
// transaction.
type Store interface {
	state.Store
	session.Store
	SaveAppend(ctx context.Context, run *state.Run, sessionID string, items []state.Item) error
}

// A Backend is a store under test and a way around its API to its rows.
// Every store New returns shares one storage with the other functions.
type Backend struct {
	// New returns a store that encodes checkpoints with m and decodes them
	// with u (nil: unsigned). Register any cleanup on t.
	New func(t *testing.T, m []state.MarshalOption, u []state.UnmarshalOption) Store
	// PutHead stores the head row of runID (inserting or replacing it):
	// its version, data and context (nil: NULL).
	PutHead func(t *testing.T, runID string, version int64, data, context []byte)
	// Items returns the item rows of runID.
	Items func(t *testing.T, runID string) []state.Piece
	// PutItem stores an item row of runID (inserting or replacing it).
	PutItem func(t *testing.T, runID string, p state.Piece)
	// DeleteItem removes the item row of runID at seq.
	DeleteItem func(t *testing.T, runID string, seq int64)
	// SetContext replaces the stored context of runID.
	SetContext func(t *testing.T, runID string, context []byte)
	// Written calls save, which saves runID once, and returns the rows and
	// bytes that save wrote, as the backend can see them.
	Written func(t *testing.T, runID string, save func()) (rows int, bytes int64)
}

// Run runs every check of this package.
func Run(t *testing.T, b Backend) {
	t.Run("RowsTampered", func(t *testing.T) { testTampered(t, b) })
	t.Run("LegacyRows", func(t *testing.T) { testLegacy(t, b) })
	t.Run("SaveAppend", func(t *testing.T) { testSaveAppend(t, b) })
	t.Run("WritesPerSave", func(t *testing.T) { testWritesPerSave(t, b) })
}

var signKey = []byte("ckpttest-key-0123456789abcdef012")

func signed(t *testing.T, b Backend) Store {
	return b.New(t, []state.MarshalOption{state.WithSigningKey("k1", signKey)},
		[]state.UnmarshalOption{state.WithVerifyKeys(map[string][]byte{"k1": signKey})})
}

// ids numbers the IDs newID makes; atomic, because a store's tests may
// run their cases in parallel.
var ids atomic.Int64

// newID returns a run or session ID unique within the test binary, named
// after the test for a reader of the database.
func newID(t *testing.T) string {
	return fmt.Sprintf("ckpttest-%s-%d", strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()), ids.Add(1))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Turn records one tool call and its output in r, as a turn of a run does.
func Turn(t testing.TB, r *state.Run, turn int) {
	t.Helper()
	first := runcore.Reserve(r, 2)
	call := fmt.Sprintf("call_%d", turn)
	if err := runcore.RecordAll(r, state.ToolCall("fc_"+call, call, "lookup", `{"q":"weather in Paris"}`).WithSeq(first),
		state.ToolOutput(call, "lookup", `{"temp_c":18,"sky":"clear"}`).WithSeq(first+1)); err != nil {
		t.Fatal(err)
	}
	runcore.SetResponse(r, state.Boundary{Start: first, End: first + 1, OutputsEnd: first + 2})
	runcore.SetTurn(r, turn)
	runcore.AddUsage(r, state.Usage{Requests: 1, InputTokens: 100, OutputTokens: 10})
}

// LongRun returns a run that starts from history items of session history
// and has recorded about history items of its own, none of them saved.
func LongRun(t testing.TB, id string, history int) *state.Run {
	t.Helper()
	r := state.NewRun(id, "assistant")
	runcore.SetMaxTurns(r, 1<<30)
	ctx := make([]state.Item, history)
	for i := range ctx {
		if i%2 == 0 {
			ctx[i] = state.UserMessage(fmt.Sprintf("question %d: what is the weather like?", i)).WithSeq(int64(i + 1))
		} else {
			ctx[i] = state.AssistantMessage(fmt.Sprintf("msg_%d", i), "It is 18°C and clear in Paris.").WithSeq(int64(i + 1))
		}
	}
	if err := runcore.SetHistory(r, ctx); err != nil {
		t.Fatal(err)
	}
	runcore.SetSessionID(r, "session-"+id)
	runcore.AddInput(r, state.UserMessage("what is the weather in Paris?"))
	for turn := 1; turn <= history/2; turn++ {
		Turn(t, r, turn)
	}
	return r
}

func load(t *testing.T, s state.Store, id string) *state.Run {
	t.Helper()
	r, err := s.Load(context.Background(), id)
	if err != nil {
		t.Fatalf("Load(%s) = %v", id, err)
	}
	return r
}

func save(t *testing.T, s state.Store, r *state.Run) {
	t.Helper()
	if err := s.Save(context.Background(), r); err != nil {
		t.Fatalf("Save(%s at version %d) = %v", r.ID(), r.Version(), err)
	}
}

func same(t *testing.T, s state.Store, want *state.Run, step string) {
	t.Helper()
	got := load(t, s, want.ID())
	if d := statetest.Diff(t, got, want); d != "" {
		t.Fatalf("%s: Load differs from the live run (-want +got):\n%s", step, d)
	}
	if got.Version() != want.Version() {
		t.Fatalf("%s: loaded version %d, live run has %d", step, got.Version(), want.Version())
	}
}

// testTampered saves runs over several saves, so that their item rows come
// from several versions, edits their rows behind the store's back, and
// checks that Load refuses each one: with ErrTampered when the store
// verifies signatures, with an error and no run otherwise.
func testTampered(t *testing.T, b Backend) {
	edits := []struct {
		name string
		edit func(t *testing.T, id string, items []state.Piece)
	}{
		{"ItemEdited", func(t *testing.T, id string, items []state.Piece) {
			for _, p := range items[1:] {
				if edited := strings.Replace(string(p.Data), `\"temp_c\":18`, `\"temp_c\":-18`, 1); edited != string(p.Data) {
					p.Data = []byte(edited)
					b.PutItem(t, id, p)
					return
				}
			}
			t.Fatalf("no stored tool output to edit among %d items", len(items))
		}},
		{"ItemVersionEdited", func(t *testing.T, id string, items []state.Piece) {
			p := items[len(items)-1]
			p.Version--
			b.PutItem(t, id, p)
		}},
		{"FirstItemDeleted", func(t *testing.T, id string, items []state.Piece) { b.DeleteItem(t, id, items[0].Seq) }},
		{"LastItemDeleted", func(t *testing.T, id string, items []state.Piece) { b.DeleteItem(t, id, items[len(items)-1].Seq) }},
		{"ItemAdded", func(t *testing.T, id string, items []state.Piece) {
			p := items[len(items)-1]
			p.Seq += 100
			b.PutItem(t, id, p)
		}},
		{"OldItemAdded", func(t *testing.T, id string, items []state.Piece) {
			p := items[0]
			p.Seq, p.Version = 1000, 0
			b.PutItem(t, id, p)
		}},
		{"ContextEdited", func(t *testing.T, id string, _ []state.Piece) {
			b.SetContext(t, id, []byte(`[]`))
		}},
		{"ContextRemoved", func(t *testing.T, id string, _ []state.Piece) { b.SetContext(t, id, nil) }},
	}
	for _, sign := range []bool{true, false} {
		name := "Unsigned"
		if sign {
			name = "Signed"
		}
		t.Run(name, func(t *testing.T) {
			s := b.New(t, nil, nil)
			if sign {
				s = signed(t, b)
			}
			for _, e := range edits {
				t.Run(e.name, func(t *testing.T) {
					r := LongRun(t, newID(t), 6)
					save(t, s, r)
					for turn := 10; turn < 13; turn++ {
						Turn(t, r, turn)
						save(t, s, r)
					}
					same(t, s, r, "before the edit")
					items := b.Items(t, r.ID())
					if len(items) < 6 {
						t.Fatalf("%d item rows stored, want at least 6", len(items))
					}
					e.edit(t, r.ID(), items)
					got, err := s.Load(context.Background(), r.ID())
					switch {
					case err == nil:
						t.Fatalf("Load of an edited checkpoint = a run, nil error; want an error")
					case got != nil:
						t.Fatalf("Load of an edited checkpoint = (%v, %v), want no run", got, err)
					case sign && !errors.Is(err, state.ErrTampered):
						t.Fatalf("Load = %v, want an error wrapping state.ErrTampered", err)
					case !sign && !errors.Is(err, state.ErrInvalid):
						t.Fatalf("Load = %v, want an error wrapping state.ErrInvalid", err)
					}
					var se *state.StoreError
					if !errors.As(err, &se) || se.Op != "load" || se.RunID != r.ID() {
						t.Fatalf("Load error %v is not a *state.StoreError of the load of %s", err, r.ID())
					}
				})
			}
		})
	}
}

// Golden returns a whole checkpoint from state/testdata.
func Golden(t testing.TB, name string) []byte {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	data, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "..", "state", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// testLegacy stores whole checkpoints as the stores wrote them before
// deltas (state.Marshal of the run in the head column, no context, no
// items), and checks that they load, take a full save and then deltas.
func testLegacy(t *testing.T, b Backend) {
	s := b.New(t, nil, nil)
	check := func(t *testing.T, id string, version int64, data []byte) {
		want, err := state.Unmarshal(data)
		must(t, err)
		runcore.SetVersion(want, version)
		b.PutHead(t, id, version, data, nil)
		got := load(t, s, id)
		same(t, s, want, "legacy row")
		Turn(t, got, 50)
		save(t, s, got)
		if got.Version() != version+1 {
			t.Fatalf("version after the first save = %d, want %d", got.Version(), version+1)
		}
		same(t, s, got, "first save over a legacy row")
		Turn(t, got, 51)
		rows, _ := b.Written(t, id, func() { save(t, s, got) })
		if rows != 2 {
			t.Errorf("second save over a legacy row wrote %d item rows, want 2 (a delta)", rows)
		}
		same(t, s, got, "delta over a legacy row")
	}
	t.Run("Golden", func(t *testing.T) {
		data := Golden(t, "paused.golden.json")
		r, err := state.Unmarshal(data)
		must(t, err)
		check(t, r.ID(), 3, data)
	})
	t.Run("Marshal", func(t *testing.T) {
		r := statetest.SampleRun(t, newID(t))
		runcore.SetVersion(r, 4) // the old stores marshalled the run, then stored it at version+1
		data, err := state.Marshal(r)
		must(t, err)
		check(t, r.ID(), 5, data)
	})
}

// testSaveAppend checks that SaveAppend commits the checkpoint and the
// session append together, or neither.
func testSaveAppend(t *testing.T, b Backend) {
	ctx := context.Background()
	s := b.New(t, nil, nil)
	list := func(t *testing.T, sid string) []state.Item {
		t.Helper()
		items, err := s.List(ctx, sid, 0)
		must(t, err)
		return items
	}
	all := func(r *state.Run) []state.Item { return r.Items().Slice() }
	newItems := func(r *state.Run) []state.Item { all := all(r); return all[len(all)-2:] }

	t.Run("Commits", func(t *testing.T) {
		r := LongRun(t, newID(t), 4)
		sid := r.SessionID()
		must(t, s.SaveAppend(ctx, r, sid, all(r)))
		same(t, s, r, "first SaveAppend")
		for turn := 10; turn < 13; turn++ {
			Turn(t, r, turn)
			must(t, s.SaveAppend(ctx, r, sid, newItems(r)))
			same(t, s, r, fmt.Sprintf("SaveAppend of turn %d", turn))
		}
		if got := list(t, sid); len(got) != len(all(r)) {
			t.Fatalf("session holds %d items, the run %d", len(got), len(all(r)))
		}
		// With no items it is Save, whatever the session ID.
		runcore.SetTurn(r, 20)
		must(t, s.SaveAppend(ctx, r, "", nil))
		same(t, s, r, "SaveAppend without items")
	})
	t.Run("AppendConflictWritesNothing", func(t *testing.T) {
		r := LongRun(t, newID(t), 4)
		sid := r.SessionID()
		must(t, s.SaveAppend(ctx, r, sid, all(r)))
		Turn(t, r, 10)
		fresh := newItems(r)
		// Another item already stands at the output's position.
		other := state.AssistantMessage("msg_x", "something else").WithSeq(fresh[1].Seq())
		must(t, s.Append(ctx, sid, r.ID(), []state.Item{other}))
		before := r.Version()
		err := s.SaveAppend(ctx, r, sid, fresh)
		if !errors.Is(err, session.ErrConflict) {
			t.Fatalf("SaveAppend over a different stored item = %v, want session.ErrConflict", err)
		}
		if r.Version() != before {
			t.Fatalf("run version %d after a failed SaveAppend, want %d (not saved)", r.Version(), before)
		}
		if got := load(t, s, r.ID()); got.Version() != before || len(all(got)) != len(all(r))-2 {
			t.Fatalf("stored checkpoint at version %d with %d items after a failed SaveAppend, want %d with %d",
				got.Version(), len(all(got)), before, len(all(r))-2)
		}
		if got := list(t, sid); len(got) != len(all(r))-1 {
			t.Fatalf("session holds %d items after a failed SaveAppend, want %d", len(got), len(all(r))-1)
		}
		// The same run saves what it failed to save, once the way is clear.
		if _, ok, err := s.Pop(ctx, sid); err != nil || !ok {
			t.Fatalf("Pop = %v, %v", ok, err)
		}
		must(t, s.SaveAppend(ctx, r, sid, fresh))
		same(t, s, r, "retry after an append conflict")
	})
	t.Run("VersionConflictAppendsNothing", func(t *testing.T) {
		r := LongRun(t, newID(t), 4)
		sid := r.SessionID()
		must(t, s.SaveAppend(ctx, r, sid, all(r)))
		stale := load(t, s, r.ID())
		Turn(t, r, 10)
		must(t, s.SaveAppend(ctx, r, sid, newItems(r)))
		Turn(t, stale, 11)
		err := s.SaveAppend(ctx, stale, sid, newItems(stale))
		if !errors.Is(err, state.ErrConflict) {
			t.Fatalf("SaveAppend of a stale run = %v, want state.ErrConflict", err)
		}
		var se *state.StoreError
		if !errors.As(err, &se) || se.Have != r.Version()-1 || se.Stored != r.Version() {
			t.Fatalf("SaveAppend conflict = %#v, want a *state.StoreError with Have %d, Stored %d", err, r.Version()-1, r.Version())
		}
		got := list(t, sid)
		if len(got) != len(all(r)) {
			t.Fatalf("session holds %d items after a conflicting SaveAppend, want %d", len(got), len(all(r)))
		}
		for i, it := range got {
			if !it.Equal(all(r)[i]) {
				t.Fatalf("session item %d = %v, want %v", i, it, all(r)[i])
			}
		}
		same(t, s, r, "after a conflicting SaveAppend")
	})
	t.Run("IdempotentRetry", func(t *testing.T) {
		r := LongRun(t, newID(t), 4)
		sid := r.SessionID()
		// A failed attempt (cancelled) writes nothing; its retry writes once.
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		if err := s.SaveAppend(cancelled, r, sid, all(r)); !errors.Is(err, context.Canceled) {
			t.Fatalf("SaveAppend(cancelled) = %v, want context.Canceled", err)
		}
		if _, err := s.Load(ctx, r.ID()); !errors.Is(err, state.ErrNotFound) {
			t.Fatalf("Load after a cancelled SaveAppend = %v, want ErrNotFound", err)
		}
		must(t, s.SaveAppend(ctx, r, sid, all(r)))
		// Items an earlier append stored are skipped, not duplicated.
		Turn(t, r, 10)
		fresh := newItems(r)
		must(t, s.Append(ctx, sid, r.ID(), fresh[:1]))
		must(t, s.SaveAppend(ctx, r, sid, fresh))
		// An attempt that committed although its caller saw an error: the
		// retry is refused by the compare-and-swap (the caller reloads)
		// and stores nothing twice.
		Turn(t, r, 11)
		fresh = newItems(r)
		must(t, s.SaveAppend(ctx, r.Clone(), sid, fresh))
		if err := s.SaveAppend(ctx, r, sid, fresh); !errors.Is(err, state.ErrConflict) {
			t.Fatalf("SaveAppend retried after it committed = %v, want state.ErrConflict", err)
		}
		got := list(t, sid)
		if len(got) != len(all(r)) {
			t.Fatalf("session holds %d items, want %d, each once", len(got), len(all(r)))
		}
		if d := statetest.Diff(t, load(t, s, r.ID()), r); d != "" {
			t.Fatalf("stored checkpoint differs from the run (-want +got):\n%s", d)
		}
	})
	t.Run("Invalid", func(t *testing.T) {
		r := LongRun(t, newID(t), 2)
		if err := s.SaveAppend(ctx, r, "", all(r)); !errors.Is(err, session.ErrInvalid) {
			t.Fatalf("SaveAppend(empty session ID) = %v, want session.ErrInvalid", err)
		}
		if err := s.SaveAppend(ctx, r, "s", []state.Item{state.UserMessage("no seq")}); !errors.Is(err, session.ErrInvalid) {
			t.Fatalf("SaveAppend(item without Seq) = %v, want session.ErrInvalid", err)
		}
		if _, err := s.Load(ctx, r.ID()); !errors.Is(err, state.ErrNotFound) || r.Version() != 0 {
			t.Fatalf("Load after invalid SaveAppends = %v (run version %d), want ErrNotFound", err, r.Version())
		}
	})
}

// WritesPerSave is what one save of a run wrote, at a history length.
type WritesPerSave struct {
	History int
	Rows    int
	Bytes   int64
}

// Writes saves a run with history items of session history and about as
// many items of its own, then measures the saves of nine more turns: it
// returns the most item rows one wrote and the least bytes one wrote: a
// save that splits a page of the database writes more, whatever the
// history, and how many of the nine split depends on where the run's rows
// meet other runs' in the same pages (on SQLite, 5 of 9 at history 2000
// and 4 of 9 at 10 in the shared file of TestCheckpointRows, so that the
// median was a split's), while a save that writes the history writes it
// every time.
func Writes(t *testing.T, b Backend, s Store, history int) WritesPerSave {
	r := LongRun(t, newID(t), history)
	save(t, s, r)
	w := WritesPerSave{History: history}
	var sizes []int64
	for turn := range 9 {
		Turn(t, r, history+turn)
		rows, n := b.Written(t, r.ID(), func() { save(t, s, r) })
		w.Rows = max(w.Rows, rows)
		sizes = append(sizes, n)
	}
	w.Bytes = slices.Min(sizes)
	same(t, s, r, fmt.Sprintf("history %d", history))
	return w
}

// testWritesPerSave checks that a save after a long run writes what a save
// after a short one writes: its new items and the head, never the history.
func testWritesPerSave(t *testing.T, b Backend) {
	s := b.New(t, nil, nil)
	short, long := Writes(t, b, s, 10), Writes(t, b, s, 2000)
	t.Logf("per save: %+v; %+v", short, long)
	if short.Rows != 2 || long.Rows != short.Rows {
		t.Errorf("item rows written per save: %d at history %d, %d at %d; want 2 at both",
			short.Rows, short.History, long.Rows, long.History)
	}
	if long.Bytes > short.Bytes+short.Bytes/2 {
		t.Errorf("bytes written per save: %d at history %d, %d at %d; want them independent of history",
			short.Bytes, short.History, long.Bytes, long.History)
	}
}
