package state_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/statetest"
)

// FuzzUnmarshal checks that Unmarshal never panics, fails only with typed
// errors, and that whatever it accepts encodes and decodes again to the
// same bytes. The seed corpus is every checkpoint in testdata, good and
// bad.
func FuzzUnmarshal(f *testing.F) {
	for _, pattern := range []string{"testdata/*.json", "testdata/bad/*.json"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, name := range files {
			data, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	keys := state.WithVerifyKeys(map[string][]byte{"golden": goldenKey})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, opts := range [][]state.UnmarshalOption{nil, {keys}} {
			r, err := state.Unmarshal(data, opts...)
			if err != nil {
				var (
					de *state.DecodeError
					ve *state.VersionError
					se *state.SignatureError
				)
				if !errors.As(err, &de) && !errors.As(err, &ve) && !errors.As(err, &se) {
					t.Fatalf("untyped error %T: %v", err, err)
				}
				if r != nil {
					t.Fatal("a run returned with an error")
				}
				continue
			}
			once, err := state.Marshal(r)
			if err != nil {
				t.Fatalf("Marshal of an accepted checkpoint: %v", err)
			}
			again, err := state.Unmarshal(once)
			if err != nil {
				t.Fatalf("re-Unmarshal of %s: %v", once, err)
			}
			twice, err := state.Marshal(again)
			if err != nil {
				t.Fatal(err)
			}
			if string(once) != string(twice) {
				t.Fatalf("not stable:\n%s\n%s", once, twice)
			}
		}
	})
}

// TestBadFixtures pins the typed error of each sample in testdata/bad.
func TestBadFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want error
	}{
		{"truncated.json", state.ErrMalformed},
		{"future_version.json", state.ErrVersion},
		{"null.json", state.ErrMalformed},
		{"wrong_type.json", state.ErrMalformed},
		{"positions.json", state.ErrInvalid},
		{"pending_unknown_call.json", state.ErrInvalid},
		{"tampered.json", state.ErrTampered},
		{"item_missing_call_id.json", state.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(filepath.Join("testdata", "bad", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			_, err = state.Unmarshal(data, state.WithVerifyKeys(map[string][]byte{"golden": goldenKey}))
			if tt.file != "tampered.json" && errors.Is(err, state.ErrTampered) {
				_, err = state.Unmarshal(data) // unsigned samples: check the content
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("Unmarshal(%s) = %v, want %v", tt.file, err, tt.want)
			}
		})
	}
}

// checkTypedDecodeError fails t unless err is one of the typed errors a
// decoder of stored checkpoints returns.
func checkTypedDecodeError(t *testing.T, err error) {
	t.Helper()
	var (
		de *state.DecodeError
		ve *state.VersionError
		se *state.SignatureError
	)
	if !errors.As(err, &de) && !errors.As(err, &ve) && !errors.As(err, &se) {
		t.Fatalf("untyped error %T: %v", err, err)
	}
}

// encodePieces frames pieces for a fuzz input: each as its Seq, a comma,
// its Version, a comma and its data, separated by the byte 0x1e.
func encodePieces(pieces []state.Piece) []byte {
	var b []byte
	for i, p := range pieces {
		if i > 0 {
			b = append(b, 0x1e)
		}
		b = fmt.Appendf(b, "%d,%d,", p.Seq, p.Version)
		b = append(b, p.Data...)
	}
	return b
}

// decodePieces reads what encodePieces writes; malformed records are
// skipped.
func decodePieces(b []byte) []state.Piece {
	var out []state.Piece
	for rec := range bytes.SplitSeq(b, []byte{0x1e}) {
		seq, rest, ok1 := bytes.Cut(rec, []byte(","))
		ver, data, ok2 := bytes.Cut(rest, []byte(","))
		s, err1 := strconv.ParseInt(string(seq), 10, 64)
		v, err2 := strconv.ParseInt(string(ver), 10, 64)
		if ok1 && ok2 && err1 == nil && err2 == nil {
			out = append(out, state.Piece{Seq: s, Version: v, Data: data})
		}
	}
	return out
}

// FuzzAssemble feeds Assemble what a store could hand it: a head, a
// context and item pieces, as given and with the head's delta record
// resealed over the pieces and context (so that the fuzzer gets past the
// digests to the decoding behind them). It must never panic and fail only
// with typed errors; a run it returns must save and load back equal, and
// its full delta must assemble back to it. The seeds are the deltas of
// real saves (testdata/fuzz/FuzzAssemble has more).
func FuzzAssemble(f *testing.F) {
	r := statetest.SampleRun(f, "run_fuzz")
	d1, err := r.Delta()
	if err != nil {
		f.Fatal(err)
	}
	r.Saved(d1)
	f.Add(d1.Head, d1.Context, encodePieces(d1.Items), false)
	seq := r.Reserve(2)
	if err := r.Record(state.ToolCall("fc_new", "call_new", "noop", `{}`).WithSeq(seq), state.ToolOutput("call_new", "noop", `"ok"`).WithSeq(seq+1)); err != nil {
		f.Fatal(err)
	}
	r.AddGuardrailResult(state.GuardrailResult{Name: "args", Stage: state.StageToolInput, Turn: 2, CallID: "call_new"})
	d2, err := r.Delta()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(d2.Head, d1.Context, encodePieces(append(slices.Clone(d1.Items), d2.Items...)), false)
	f.Add(d2.Head, d1.Context, encodePieces(d2.Items), true)
	f.Add(mustMarshal(f, r), []byte(nil), []byte(nil), false) // a whole checkpoint
	f.Fuzz(func(t *testing.T, head, context, pieces []byte, seal bool) {
		items := decodePieces(pieces)
		if seal {
			head = state.SealHead(head, context, items)
		}
		r, err := state.Assemble(head, context, items)
		if err != nil {
			if r != nil {
				t.Fatal("a run returned with an error")
			}
			checkTypedDecodeError(t, err)
			return
		}
		saved, err := state.Marshal(r)
		if err != nil {
			t.Fatalf("Marshal of an assembled run: %v", err)
		}
		again, err := state.Unmarshal(saved)
		if err != nil {
			t.Fatalf("Unmarshal of %s: %v", saved, err)
		}
		d, err := again.Delta()
		if err != nil {
			t.Fatalf("Delta of an assembled run: %v", err)
		}
		back, err := state.Assemble(d.Head, d.Context, d.Items)
		if err != nil {
			t.Fatalf("Assemble of the delta of an assembled run: %v", err)
		}
		if diff := statetest.Diff(t, back, r); diff != "" {
			t.Fatalf("save and load changed the run (-want +got):\n%s", diff)
		}
	})
}
