package filestore_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/filestore"
	"github.com/turnkit/turnkit/state/statetest"
)

func newStore(t *testing.T, dir string, opts ...filestore.Option) *filestore.Store {
	t.Helper()
	s, err := filestore.New(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStore(t *testing.T) {
	statetest.TestStore(t, func(t *testing.T) state.Store { return newStore(t, t.TempDir()) })
}

func TestSignedStore(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	statetest.TestStore(t, func(t *testing.T) state.Store {
		return newStore(t, t.TempDir(), filestore.WithCodec(
			[]state.MarshalOption{state.WithSigningKey("k1", key)},
			[]state.UnmarshalOption{state.WithVerifyKeys(map[string][]byte{"k1": key})},
		))
	})
}

// TestSignedStoreRefusesEdits runs the signed suite against the store,
// editing its files directly.
func TestSignedStoreRefusesEdits(t *testing.T) {
	dir := t.TempDir()
	files := newStore(t, dir)
	statetest.TestSignedStore(t,
		func(t *testing.T, m []state.MarshalOption, u []state.UnmarshalOption) state.Store {
			return newStore(t, dir, filestore.WithCodec(m, u))
		},
		func(t *testing.T, runID string, edit func([]byte) []byte) {
			data, err := os.ReadFile(files.Path(runID))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(files.Path(runID), edit(data), 0o600); err != nil {
				t.Fatal(err)
			}
		})
}

// change makes a change a save writes as a delta: a guardrail result (a
// stored piece) and an extension (the head).
func change(r *state.Run, n int) {
	r.AddGuardrailResult(state.GuardrailResult{Name: "args", Stage: state.StageToolInput, Turn: r.Turn(), CallID: "call_" + strconv.Itoa(n)})
	r.SetExtension("example.com/counter", json.RawMessage(`{"n":`+strconv.Itoa(n)+`}`))
}

// TestLoadsWholeCheckpoint: a checkpoint file in the format the file store
// wrote before deltas (one whole checkpoint per run) loads, and the next
// save builds on it.
func TestLoadsWholeCheckpoint(t *testing.T) {
	ctx := context.Background()
	golden, err := os.ReadFile(filepath.Join("..", "testdata", "paused.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := state.Unmarshal(golden)
	if err != nil {
		t.Fatal(err)
	}
	s := newStore(t, t.TempDir())
	if err := os.WriteFile(s.Path(want.ID()), golden, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(ctx, want.ID())
	if err != nil {
		t.Fatalf("Load of a whole checkpoint: %v", err)
	}
	if d := statetest.Diff(t, got, want); d != "" {
		t.Fatalf("Load of a whole checkpoint (-want +got):\n%s", d)
	}
	change(got, 1)
	if err := s.Save(ctx, got); err != nil {
		t.Fatalf("Save over a whole checkpoint: %v", err)
	}
	change(got, 2)
	if err := s.Save(ctx, got); err != nil {
		t.Fatal(err)
	}
	again, err := s.Load(ctx, want.ID())
	if err != nil {
		t.Fatal(err)
	}
	if d := statetest.Diff(t, again, got); d != "" {
		t.Errorf("Load after delta saves over a whole checkpoint (-want +got):\n%s", d)
	}
}

// TestIgnoresUncommittedSave: a save file left by a save that died before
// its head was renamed is not read, and the next save replaces it.
func TestIgnoresUncommittedSave(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, t.TempDir())
	r := statetest.SampleRun(t, "run_torn")
	if err := s.Save(ctx, r); err != nil {
		t.Fatal(err)
	}
	want := r.Clone()
	dir := filepath.Join(filepath.Dir(s.Path(r.ID())), "run_torn.saves")
	next := filepath.Join(dir, strconv.FormatInt(r.Version()+1, 10))
	if err := os.WriteFile(next, []byte(`{"version":2,"items":[{"seq":99,"data":{}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(ctx, r.ID())
	if err != nil {
		t.Fatalf("Load with an uncommitted save file: %v", err)
	}
	if d := statetest.Diff(t, got, want); d != "" {
		t.Fatalf("Load read an uncommitted save (-want +got):\n%s", d)
	}
	r.SetExtension("example.com/counter", json.RawMessage(`{"n":9}`)) // a save with no new items
	if err := s.Save(ctx, r); err != nil {
		t.Fatal(err)
	}
	if got, err = s.Load(ctx, r.ID()); err != nil {
		t.Fatalf("Load after the next save: %v", err)
	}
	if d := statetest.Diff(t, got, r); d != "" {
		t.Errorf("the next save did not replace the uncommitted one (-want +got):\n%s", d)
	}
}
