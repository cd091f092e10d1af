package state_test

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/statetest"
)

// grown returns a run of n items of history, saved: its delta taken and
// reported saved, as a store does.
func grown(t *testing.T, n int) *state.Run {
	t.Helper()
	r := state.NewRun("run_delta", "assistant")
	hist := make([]state.Item, n)
	for i := range hist {
		hist[i] = state.UserMessage(fmt.Sprintf("earlier %d", i)).WithSeq(int64(i + 1))
	}
	r.SetHistory(hist)
	r.AddInput(state.UserMessage("go"))
	for i := range n {
		call := "call_" + strconv.Itoa(i)
		seq := r.Reserve(2)
		if err := r.Record(state.ToolCall("fc_"+call, call, "noop", `{}`).WithSeq(seq), state.ToolOutput(call, "noop", `"ok"`).WithSeq(seq+1)); err != nil {
			t.Fatal(err)
		}
		r.AddGuardrailResult(state.GuardrailResult{Name: "args", Stage: state.StageToolInput, Turn: i + 1, CallID: call})
	}
	saveDelta(t, r)
	return r
}

// saveDelta takes r's delta and reports it saved, as a store does.
func saveDelta(t *testing.T, r *state.Run) *state.Delta {
	t.Helper()
	d, err := r.Delta()
	if err != nil {
		t.Fatal(err)
	}
	r.Saved(d)
	return d
}

// oneTurn records one call and its output in r.
func oneTurn(t *testing.T, r *state.Run) {
	t.Helper()
	seq := r.Reserve(2)
	if err := r.Record(state.ToolCall("fc_new", "call_new", "noop", `{}`).WithSeq(seq), state.ToolOutput("call_new", "noop", `"ok"`).WithSeq(seq+1)); err != nil {
		t.Fatal(err)
	}
	r.SetTurn(r.Turn() + 1)
	r.AddGuardrailResult(state.GuardrailResult{Name: "args", Stage: state.StageToolInput, Turn: r.Turn(), CallID: "call_new"})
}

// TestDeltaDoesNotGrowWithHistory holds invariant 14 for checkpoints: after
// a save, the next one writes the turn's items and a head whose size does
// not depend on how long the run or its context is.
func TestDeltaDoesNotGrowWithHistory(t *testing.T) {
	heads := map[int]int{}
	for _, n := range []int{10, 2000} {
		r := grown(t, n)
		oneTurn(t, r)
		d, err := r.Delta()
		if err != nil {
			t.Fatal(err)
		}
		if d.Full || d.Context != nil || len(d.Items) != 3 {
			t.Fatalf("history %d: delta full=%v, context %d bytes, %d pieces; want only the turn's 2 items and 1 guardrail result", n, d.Full, len(d.Context), len(d.Items))
		}
		heads[n] = len(d.Head)
	}
	if diff := heads[2000] - heads[10]; diff < 0 || diff > 16 {
		t.Errorf("head is %d bytes at history 10 and %d at 2000: it grows with history", heads[10], heads[2000])
	}
}

// TestDeltaFullWhenBaselineUnknown: a run that did not come from a store at
// its version (new, unmarshalled, version changed by hand) saves in full.
func TestDeltaFullWhenBaselineUnknown(t *testing.T) {
	r := grown(t, 5)
	data, err := state.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	back, err := state.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	for name, run := range map[string]*state.Run{"new": state.NewRun("x", "a"), "unmarshalled": back} {
		d, err := run.Delta()
		if err != nil {
			t.Fatal(err)
		}
		if want := run.Len() + len(run.GuardrailResults()); !d.Full || d.Context == nil || len(d.Items) != want {
			t.Errorf("%s run: delta full=%v, %d of %d pieces, context set %v; want a full save", name, d.Full, len(d.Items), want, d.Context != nil)
		}
	}
	r.SetVersion(r.Version() + 3)
	if d, _ := r.Delta(); !d.Full {
		t.Error("a run whose version moved away from its baseline saves a delta")
	}
}

// TestNoJournalWithoutStore: a run never saved keeps no record of what
// changed, so runs without checkpoints pay nothing for them.
func TestNoJournalWithoutStore(t *testing.T) {
	r := state.NewRun("x", "a")
	r.AddInput(state.UserMessage("hi"))
	if n := state.JournalLen(r); n != 0 {
		t.Errorf("journal holds %d positions for a run no store holds", n)
	}
	saved := grown(t, 3)
	oneTurn(t, saved)
	if n := state.JournalLen(saved); n != 2 {
		t.Errorf("journal holds %d positions after one turn of a saved run, want 2", n)
	}
}

// TestAssembleRefusesEditedParts edits what a store keeps behind its back:
// an item changed, dropped, added or moved to another save, and the
// context changed. With signing each is ErrTampered; without it, ErrInvalid.
func TestAssembleRefusesEditedParts(t *testing.T) {
	key := []byte("delta test key 0123456789abcdef!")
	for _, signed := range []bool{true, false} {
		var mopts []state.MarshalOption
		var uopts []state.UnmarshalOption
		want := state.ErrInvalid
		if signed {
			mopts = []state.MarshalOption{state.WithSigningKey("k", key)}
			uopts = []state.UnmarshalOption{state.WithVerifyKeys(map[string][]byte{"k": key})}
			want = state.ErrTampered
		}
		r := statetest.SampleRun(t, "run_edit")
		d1, err := r.Delta(mopts...)
		if err != nil {
			t.Fatal(err)
		}
		r.Saved(d1)
		oneTurn(t, r)
		d2, err := r.Delta(mopts...)
		if err != nil {
			t.Fatal(err)
		}
		r.Saved(d2)
		items := append(append([]state.Piece{}, d1.Items...), d2.Items...)
		got, err := state.Assemble(d2.Head, d1.Context, items, uopts...)
		if err != nil {
			t.Fatalf("signed=%v: Assemble of what was saved: %v", signed, err)
		}
		if d := statetest.Diff(t, got, r); d != "" {
			t.Fatalf("signed=%v: Assemble (-want +got):\n%s", signed, d)
		}
		edits := map[string]func() ([]byte, []state.Piece){
			"item edited": func() ([]byte, []state.Piece) {
				c := clonePieces(items)
				c[1].Data = bytes.Replace(c[1].Data, []byte("a"), []byte("b"), 1)
				return d1.Context, c
			},
			"item dropped": func() ([]byte, []state.Piece) { return d1.Context, clonePieces(items)[1:] },
			"item added": func() ([]byte, []state.Piece) {
				c := clonePieces(items)
				extra := c[len(c)-1]
				extra.Seq += 100
				return d1.Context, append(c, extra)
			},
			"item moved to another save": func() ([]byte, []state.Piece) {
				c := clonePieces(items)
				c[0].Version = d2.Version
				return d1.Context, c
			},
			"context edited": func() ([]byte, []state.Piece) {
				return bytes.Replace(d1.Context, []byte("earlier"), []byte("EARLIER"), 1), items
			},
			"context dropped": func() ([]byte, []state.Piece) { return nil, items },
			"guardrail result dropped": func() ([]byte, []state.Piece) {
				var c []state.Piece
				for _, p := range items {
					if p.Seq != -1 {
						c = append(c, p)
					}
				}
				return d1.Context, c
			},
		}
		for name, edit := range edits {
			ctxData, pieces := edit()
			_, err := state.Assemble(d2.Head, ctxData, pieces, uopts...)
			if !errors.Is(err, want) {
				t.Errorf("signed=%v, %s: Assemble = %v, want %v", signed, name, err, want)
			}
		}

		// A whole checkpoint (Marshal's, a store's earlier format) has no
		// delta record: it is decoded alone, and stored items beside it
		// are not its own.
		whole, err := state.Marshal(r, mopts...)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := state.Assemble(whole, nil, nil, uopts...); err != nil {
			t.Errorf("signed=%v: Assemble of a whole checkpoint: %v", signed, err)
		} else if d := statetest.Diff(t, got, r); d != "" {
			t.Errorf("signed=%v: Assemble of a whole checkpoint (-want +got):\n%s", signed, d)
		}
		if _, err := state.Assemble(whole, d1.Context, items, uopts...); !errors.Is(err, state.ErrInvalid) {
			t.Errorf("signed=%v: Assemble of a whole checkpoint with stored items = %v, want ErrInvalid", signed, err)
		}
	}
}

func clonePieces(p []state.Piece) []state.Piece {
	c := make([]state.Piece, len(p))
	for i := range p {
		c[i] = p[i]
		c[i].Data = bytes.Clone(p[i].Data)
	}
	return c
}

// TestRecordedWhileSaving: an item recorded after a delta was taken and
// before the store reported it saved (a parallel tool call's output during
// the save) is in the next delta, for a first (full) save as for later
// ones: nothing recorded between Delta and Saved is lost.
func TestRecordedWhileSaving(t *testing.T) {
	for _, first := range []bool{true, false} {
		r := state.NewRun("run_race", "a")
		r.AddInput(state.UserMessage("go"))
		if !first {
			saveDelta(t, r)
		}
		seq := r.Reserve(2)
		if err := r.Record(state.ToolCall("fc_1", "call_1", "noop", `{}`).WithSeq(seq)); err != nil {
			t.Fatal(err)
		}
		d, err := r.Delta()
		if err != nil {
			t.Fatal(err)
		}
		// Recorded while the store writes d.
		if err := r.Record(state.ToolOutput("call_1", "noop", `"ok"`).WithSeq(seq + 1)); err != nil {
			t.Fatal(err)
		}
		r.Saved(d)
		next, err := r.Delta()
		if err != nil {
			t.Fatal(err)
		}
		if len(next.Items) != 1 || next.Items[0].Seq != seq+1 {
			t.Errorf("first save %v: the next delta holds %v, want the output recorded during the save", first, next.Items)
		}
	}
}

// TestSavedTwice: a store that reports one save twice, or reports a delta
// of another run, does not make the next delta lose what was recorded in
// between.
func TestSavedTwice(t *testing.T) {
	r := grown(t, 3)
	oneTurn(t, r)
	d, err := r.Delta()
	if err != nil {
		t.Fatal(err)
	}
	r.Saved(d)
	oneTurn(t, r) // recorded after the save
	r.Saved(d)    // reported again
	other := state.NewRun("another", "a")
	od, err := other.Delta()
	if err != nil {
		t.Fatal(err)
	}
	r.Saved(od)
	next, err := r.Delta()
	if err != nil {
		t.Fatal(err)
	}
	if next.Base != d.Version || len(next.Items) != 3 {
		t.Errorf("next delta: base %d, %d pieces; want base %d and the later turn's 3 pieces", next.Base, len(next.Items), d.Version)
	}
}

// TestHeadVersions: a stored head names its version and the full save its
// pieces start from; a whole checkpoint names no full save.
func TestHeadVersions(t *testing.T) {
	r := grown(t, 3) // version 1, full
	oneTurn(t, r)
	d := saveDelta(t, r) // version 2, a delta on 1
	if v, full, err := state.HeadVersions(d.Head); err != nil || v != 2 || full != 1 {
		t.Errorf("HeadVersions of a delta's head = %d, %d, %v; want 2, 1, nil", v, full, err)
	}
	r.SetVersion(5) // away from its baseline: the next save is full
	d = saveDelta(t, r)
	if v, full, err := state.HeadVersions(d.Head); err != nil || v != 6 || full != 6 {
		t.Errorf("HeadVersions of a full save's head = %d, %d, %v; want 6, 6, nil", v, full, err)
	}
	whole, err := state.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if v, full, err := state.HeadVersions(whole); err != nil || v != 6 || full != 0 {
		t.Errorf("HeadVersions of a whole checkpoint = %d, %d, %v; want 6, 0, nil", v, full, err)
	}
	if _, _, err := state.HeadVersions([]byte("{not json")); !errors.Is(err, state.ErrMalformed) {
		t.Errorf("HeadVersions of a broken head = %v, want ErrMalformed", err)
	}
}

// TestDeltaFiled checks Delta.Filed, which lets a store leave its listing
// as it is: false for a full delta, and for one after which the run's
// session or status is not what its base was filed under; true while
// neither changed, and after a run is assembled from what a store holds.
func TestDeltaFiled(t *testing.T) {
	r := state.NewRun("run_filed", "assistant")
	r.SetSessionID("s1")
	r.AddInput(state.UserMessage("go"))
	var stored []state.Piece
	var ctx []byte
	step := func(name string, want bool) *state.Delta {
		t.Helper()
		d := saveDelta(t, r)
		if d.Filed != want {
			t.Errorf("%s: Filed = %v, want %v (full %v, session %q, status %v)", name, d.Filed, want, d.Full, d.Summary.SessionID, d.Summary.Status)
		}
		if d.Full {
			stored = nil
		}
		stored = append(stored, d.Items...)
		if d.Context != nil {
			ctx = d.Context
		}
		return d
	}
	step("first save", false)
	oneTurn(t, r)
	step("a turn", true)
	r.SetSessionID("s2")
	step("another session", false)
	oneTurn(t, r)
	step("a turn in it", true)
	// A call held for approval, its output's position reserved.
	first := r.Reserve(2)
	if err := r.Record(state.ToolCall("fc_held", "call_held", "noop", `{}`).WithSeq(first)); err != nil {
		t.Fatal(err)
	}
	r.AddPending(state.Approval{Tool: "noop", CallID: "call_held", Arguments: `{}`, Agent: "assistant", Seq: first, OutputSeq: first + 1})
	d := step("paused", false)
	if d.Summary.Status != state.RunPaused {
		t.Fatalf("status %v, want paused", d.Summary.Status)
	}
	r.SetTurn(r.Turn() + 1)
	last := step("still paused", true)

	// A run assembled from what a store holds is filed as it was saved.
	loaded, err := state.Assemble(last.Head, ctx, stored)
	if err != nil {
		t.Fatal(err)
	}
	loaded.SetTurn(loaded.Turn() + 1)
	if d, err := loaded.Delta(); err != nil || d.Full || !d.Filed {
		t.Errorf("assembled run's delta: full %v, Filed %v (%v); want filed", d.Full, d.Filed, err)
	}
	r.ResolvePending("call_held")
	r.Finish("done")
	step("finished", false)
	r.SetTurn(r.Turn() + 1)
	step("finished, again", true)
}
