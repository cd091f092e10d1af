package state_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/statetest"
)

// snapshot is everything a Run exposes, read through its accessors, so
// that a round trip is checked independently of the codec itself.
type snapshot struct {
	ID, Agent, SessionID, Final string
	Turn, MaxTurns, Len         int
	Version, NextSeq, Watermark int64
	Finished                    bool
	Input, Items, Model, Hist   []itemView
	Response                    state.Boundary
	Pending                     []state.Approval
	Decisions                   []state.Decision
	Guards                      []state.GuardrailResult
	Usage                       state.Usage
	Trace                       map[string]string
	Completed                   map[string]int64
	Ext                         map[string]string
}

type itemView struct {
	Seq                int64
	Kind               string
	CallID, Name, Text string
	Raw                string
	Parts              int // len(Content()), or -1 when it is nil
}

func partsOf(it state.Item) int {
	if c := it.Content(); c != nil {
		return len(c)
	}
	return -1
}

func views(items []state.Item) []itemView {
	out := make([]itemView, len(items))
	for i, it := range items {
		out[i] = itemView{it.Seq(), it.Kind().String(), it.CallID(), it.Name(), it.Text(), string(it.Raw()), partsOf(it)}
	}
	return out
}

func snap(r *state.Run, extKeys ...string) snapshot {
	s := snapshot{
		ID: r.ID(), Agent: r.Agent(), SessionID: r.SessionID(), Turn: r.Turn(), MaxTurns: r.MaxTurns(), Len: r.Len(),
		Version: r.Version(), NextSeq: r.NextSeq(), Watermark: r.SessionWatermark(),
		Input: views(r.Input()), Items: views(r.Items().Slice()), Model: views(r.ModelInput().Slice()), Hist: views(r.History()),
		Response: r.Response(), Pending: r.Pending(), Decisions: r.Decisions(), Guards: r.GuardrailResults(),
		Usage: r.Usage(), Trace: r.TraceContext(), Completed: map[string]int64{}, Ext: map[string]string{},
	}
	s.Final, s.Finished = r.FinalOutput()
	for _, it := range r.Items().All() {
		if it.Kind().IsCall() {
			if seq, ok := r.Completed(it.CallID()); ok {
				s.Completed[it.CallID()] = seq
			}
		}
	}
	for _, k := range extKeys {
		if v, ok := r.Extension(k); ok {
			s.Ext[k] = string(v)
		}
	}
	return s
}

func mustUnmarshal(t testing.TB, data []byte, opts ...state.UnmarshalOption) *state.Run {
	t.Helper()
	r, err := state.Unmarshal(data, opts...)
	if err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	return r
}

func mustMarshal(t testing.TB, r *state.Run, opts ...state.MarshalOption) []byte {
	t.Helper()
	data, err := state.Marshal(r, opts...)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	return data
}

func TestRoundTripKeepsEveryField(t *testing.T) {
	t.Parallel()
	want := statetest.SampleRun(t, "run_1")
	want.SetVersion(4)
	for _, opts := range [][]state.MarshalOption{nil, {state.WithIndent()}} {
		got := mustUnmarshal(t, mustMarshal(t, want, opts...))
		if d := cmp.Diff(snap(want, "example.com/counter"), snap(got, "example.com/counter")); d != "" {
			t.Errorf("round trip (-want +got):\n%s", d)
		}
	}
}

func TestRoundTripAfterHandoffFilter(t *testing.T) {
	t.Parallel()
	want := statetest.SampleRun(t, "run_1")
	want.ReplaceContext([]state.Item{state.SystemMessage("summary so far")})
	seq := want.Reserve(1)
	if err := want.Record(state.AssistantMessage("m9", "after the handoff").WithSeq(seq)); err != nil {
		t.Fatal(err)
	}
	want.Finish("after the handoff")
	got := mustUnmarshal(t, mustMarshal(t, want))
	if d := cmp.Diff(snap(want), snap(got)); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
}

// edit decodes a checkpoint, lets f change its generic form, and encodes
// it again.
func edit(t *testing.T, data []byte, f func(doc, run map[string]any)) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	f(doc, doc["run"].(map[string]any))
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func at(v any, path ...any) map[string]any {
	for _, p := range path {
		switch p := p.(type) {
		case string:
			v = v.(map[string]any)[p]
		case int:
			v = v.([]any)[p]
		}
	}
	return v.(map[string]any)
}

func TestUnmarshalErrors(t *testing.T) {
	t.Parallel()
	good := mustMarshal(t, statetest.SampleRun(t, "run_1"))
	tests := []struct {
		name     string
		give     []byte
		opts     []state.UnmarshalOption
		wantErr  error
		wantPath string
	}{
		{name: "empty", give: nil, wantErr: state.ErrMalformed, wantPath: "$"},
		{name: "null", give: []byte("null"), wantErr: state.ErrMalformed, wantPath: "$"},
		{name: "array", give: []byte("[]"), wantErr: state.ErrMalformed, wantPath: "$"},
		{name: "truncated", give: good[:len(good)/2], wantErr: state.ErrMalformed, wantPath: "$.run.context[0].seq"},
		{name: "trailing data", give: append(bytes.Clone(good), "{}"...), wantErr: state.ErrMalformed, wantPath: "$"},
		{name: "too large", give: good, opts: []state.UnmarshalOption{state.WithMaxSize(100)}, wantErr: state.ErrTooLarge, wantPath: "$"},
		{name: "future version", give: edit(t, good, func(d, _ map[string]any) { d["version"] = 2 }), wantErr: state.ErrVersion},
		{name: "old version without migration", give: edit(t, good, func(d, _ map[string]any) { d["version"] = 0 }), wantErr: state.ErrVersion},
		{name: "other schema", give: edit(t, good, func(d, _ map[string]any) { d["schema"] = "agents.RunState" }), wantErr: state.ErrVersion},
		{name: "run null", give: edit(t, good, func(d, _ map[string]any) { d["run"] = nil }), wantErr: state.ErrMalformed, wantPath: "$.run"},
		{name: "unknown field", give: edit(t, good, func(_, r map[string]any) { r["surprise"] = 1 }), wantErr: state.ErrMalformed, wantPath: "$.run"},
		{name: "missing id", give: edit(t, good, func(_, r map[string]any) { delete(r, "id") }), wantErr: state.ErrMalformed, wantPath: "$.run.id"},
		{name: "wrong type", give: edit(t, good, func(_, r map[string]any) { r["turn"] = "two" }), wantErr: state.ErrMalformed, wantPath: "$.run.turn"},
		{name: "item wrong type", give: edit(t, good, func(_, r map[string]any) { at(r, "items", 2)["seq"] = "x" }), wantErr: state.ErrMalformed, wantPath: "$.run.items[2].seq"},
		{name: "item unknown kind", give: edit(t, good, func(_, r map[string]any) { at(r, "items", 1)["kind"] = "bogus" }), wantErr: state.ErrMalformed, wantPath: "$.run.items[1]"},
		{name: "item raw of another kind", give: edit(t, good, func(_, r map[string]any) { at(r, "items", 1)["kind"] = "tool_call" }), wantErr: state.ErrMalformed, wantPath: "$.run.items[1].raw"},
		{name: "item missing raw", give: edit(t, good, func(_, r map[string]any) { delete(at(r, "items", 0), "raw") }), wantErr: state.ErrMalformed, wantPath: "$.run.items[0].raw"},
		{name: "pending wrong type", give: edit(t, good, func(_, r map[string]any) { at(r, "pending", 0)["seq"] = true }), wantErr: state.ErrMalformed, wantPath: "$.run.pending[0].seq"},
		{name: "bad verdict", give: edit(t, good, func(_, r map[string]any) { at(r, "decisions", 0)["verdict"] = "maybe" }), wantErr: state.ErrMalformed, wantPath: "$.run.decisions[0]"},
		{name: "positions not increasing", give: edit(t, good, func(_, r map[string]any) { at(r, "items", 2)["seq"] = 1 }), wantErr: state.ErrInvalid, wantPath: "$.run.items[2].seq"},
		{name: "position not reserved", give: edit(t, good, func(_, r map[string]any) { r["next_seq"] = 3 }), wantErr: state.ErrInvalid},
		{name: "boundary out of range", give: edit(t, good, func(_, r map[string]any) { at(r, "response")["outputs_end"] = 99 }), wantErr: state.ErrInvalid, wantPath: "$.run.response"},
		{name: "pending call missing", give: edit(t, good, func(_, r map[string]any) { at(r, "pending", 0)["call_id"] = "call_gone" }), wantErr: state.ErrInvalid, wantPath: "$.run.pending[0]"},
		{name: "pending arguments differ from the call", give: edit(t, good, func(_, r map[string]any) { at(r, "pending", 0)["arguments"] = `{}` }), wantErr: state.ErrInvalid, wantPath: "$.run.pending[0]"},
		{name: "pending call answered", give: edit(t, good, func(_, r map[string]any) { at(r, "pending", 0)["output_seq"] = at(r, "items", 5)["seq"] }), wantErr: state.ErrInvalid, wantPath: "$.run.pending[0]"},
		{name: "decision for unknown call", give: edit(t, good, func(_, r map[string]any) {
			r["decisions"] = []any{map[string]any{"tool": "x", "call_id": "call_gone", "verdict": "approved"}}
		}), wantErr: state.ErrInvalid, wantPath: "$.run.decisions[0]"},
		{name: "output without call", give: edit(t, good, func(_, r map[string]any) {
			at(r, "items", 5)["raw"] = map[string]any{"type": "function_call_output", "call_id": "call_other", "output": "x"}
		}), wantErr: state.ErrInvalid, wantPath: "$.run.items[5]"},
		{name: "context_from out of range", give: edit(t, good, func(_, r map[string]any) { r["context_from"] = 50 }), wantErr: state.ErrInvalid, wantPath: "$.run.context_from"},
		{name: "pending call repeated", give: edit(t, good, func(_, r map[string]any) {
			p := r["pending"].([]any)
			r["pending"] = append(p, p[0])
		}), wantErr: state.ErrInvalid, wantPath: "$.run.pending[1]"},
		{name: "pending call ID empty", give: edit(t, good, func(_, r map[string]any) { at(r, "pending", 0)["call_id"] = "" }), wantErr: state.ErrInvalid, wantPath: "$.run.pending[0]"},
		{name: "watermark past next_seq", give: edit(t, good, func(_, r map[string]any) { r["session_watermark"] = 999 }), wantErr: state.ErrInvalid, wantPath: "$.run.session_watermark"},
		{name: "watermark at next_seq", give: edit(t, good, func(_, r map[string]any) { r["session_watermark"] = r["next_seq"] }), wantErr: state.ErrInvalid, wantPath: "$.run.session_watermark"},
		{name: "watermark negative", give: edit(t, good, func(_, r map[string]any) { r["session_watermark"] = -1 }), wantErr: state.ErrInvalid, wantPath: "$.run.session_watermark"},
		{name: "input not among items", give: edit(t, good, func(_, r map[string]any) { at(r, "input", 0)["seq"] = 2 }), wantErr: state.ErrInvalid, wantPath: "$.run.input[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := state.Unmarshal(tt.give, tt.opts...)
			if r != nil || !errors.Is(err, tt.wantErr) {
				t.Fatalf("Unmarshal = %v, %v; want nil, %v", r, err, tt.wantErr)
			}
			if tt.wantPath == "" {
				return
			}
			var de *state.DecodeError
			if !errors.As(err, &de) || de.Path != tt.wantPath {
				t.Fatalf("error %v: path %q, want a *DecodeError at %q", err, pathOf(err), tt.wantPath)
			}
		})
	}
}

func pathOf(err error) string {
	var de *state.DecodeError
	if errors.As(err, &de) {
		return de.Path
	}
	return ""
}

func TestFutureVersionIsTyped(t *testing.T) {
	t.Parallel()
	data := edit(t, mustMarshal(t, statetest.SampleRun(t, "r")), func(d, _ map[string]any) { d["version"] = 7 })
	_, err := state.Unmarshal(data)
	var ve *state.VersionError
	if !errors.As(err, &ve) || ve.Version != 7 || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Unmarshal(version 7) = %v, want a *VersionError for 7", err)
	}
}

func TestMigrationHook(t *testing.T) {
	t.Parallel()
	want := statetest.SampleRun(t, "r")
	// A "version 0" checkpoint called the turn "step".
	old := bytes.Replace(mustMarshal(t, want), []byte(`"version":1,"run"`), []byte(`"version":0,"run"`), 1)
	old = bytes.Replace(old, []byte(`"turn":2,`), []byte(`"step":2,`), 1)
	migrate := state.WithMigration(0, func(run json.RawMessage) (json.RawMessage, error) {
		if !bytes.Contains(run, []byte(`"step":`)) {
			return nil, errors.New("not a version 0 run")
		}
		return bytes.Replace(run, []byte(`"step":`), []byte(`"turn":`), 1), nil
	})
	got := mustUnmarshal(t, old, migrate)
	if d := cmp.Diff(snap(want), snap(got)); d != "" {
		t.Errorf("migrated (-want +got):\n%s", d)
	}
	failing := state.WithMigration(0, func(json.RawMessage) (json.RawMessage, error) { return nil, errors.New("nope") })
	if _, err := state.Unmarshal(old, failing); !errors.Is(err, state.ErrMalformed) {
		t.Errorf("failing migration: %v, want ErrMalformed", err)
	}
}

func TestSigning(t *testing.T) {
	t.Parallel()
	k1, k2 := []byte("key one, thirty-two bytes long!!"), []byte("key two, thirty-two bytes long!!")
	run := statetest.SampleRun(t, "r")
	signed1 := mustMarshal(t, run, state.WithSigningKey("k1", k1))
	signed2 := mustMarshal(t, run, state.WithSigningKey("k2", k2), state.WithIndent())
	unsigned := mustMarshal(t, run)
	both := state.WithVerifyKeys(map[string][]byte{"k1": k1, "k2": k2})
	tests := []struct {
		name    string
		give    []byte
		opts    []state.UnmarshalOption
		wantErr error
	}{
		{name: "old key during rotation", give: signed1, opts: []state.UnmarshalOption{both}},
		{name: "new key, indented", give: signed2, opts: []state.UnmarshalOption{both}},
		{name: "no verification", give: signed1},
		{name: "unsigned refused", give: unsigned, opts: []state.UnmarshalOption{both}, wantErr: state.ErrTampered},
		{name: "retired key refused", give: signed1, opts: []state.UnmarshalOption{state.WithVerifyKeys(map[string][]byte{"k2": k2})}, wantErr: state.ErrTampered},
		{name: "wrong key material", give: signed1, opts: []state.UnmarshalOption{state.WithVerifyKeys(map[string][]byte{"k1": k2})}, wantErr: state.ErrTampered},
		{name: "edited usage", give: edit(t, signed1, func(_, r map[string]any) { at(r, "usage")["input_tokens"] = 1 }), opts: []state.UnmarshalOption{both}, wantErr: state.ErrTampered},
		{name: "edited agent", give: bytes.Replace(signed1, []byte(`"agent":"assistant"`), []byte(`"agent":"admin"`), 1), opts: []state.UnmarshalOption{both}, wantErr: state.ErrTampered},
		{name: "key id swapped", give: bytes.Replace(signed1, []byte(`"key_id":"k1"`), []byte(`"key_id":"k2"`), 1), opts: []state.UnmarshalOption{both}, wantErr: state.ErrTampered},
		{name: "keys reordered", give: edit(t, signed1, func(_, _ map[string]any) {}), opts: []state.UnmarshalOption{both}, wantErr: state.ErrTampered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := state.Unmarshal(tt.give, tt.opts...)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Unmarshal = %v, want %v", err, tt.wantErr)
			}
			if err == nil {
				if d := cmp.Diff(snap(run), snap(got)); d != "" {
					t.Errorf("(-want +got):\n%s", d)
				}
			}
		})
	}
}

func TestMarshalDoesNotChangeTheRun(t *testing.T) {
	t.Parallel()
	r := statetest.SampleRun(t, "r")
	before := snap(r, "example.com/counter")
	mustMarshal(t, r, state.WithSigningKey("k", []byte("k")), state.WithIndent())
	if d := cmp.Diff(before, snap(r, "example.com/counter")); d != "" {
		t.Errorf("Marshal changed the run:\n%s", d)
	}
}

// TestCacheWriteTokens: the cache-write count is written only when it is
// not zero (a run without cache writes keeps the format earlier versions
// read), and both decode paths read it back.
func TestCacheWriteTokens(t *testing.T) {
	t.Parallel()
	r := state.NewRun("run_cache", "a")
	r.AddInput(state.UserMessage("hi"))
	if data := mustMarshal(t, r); bytes.Contains(data, []byte("cache_write_tokens")) {
		t.Fatalf("a zero count was written: %s", data)
	}
	r.AddUsage(state.Usage{Requests: 1, InputTokens: 5000, CachedTokens: 0, CacheWriteTokens: 4096})
	data := mustMarshal(t, r)
	if !bytes.Contains(data, []byte(`"cached_tokens":0,"cache_write_tokens":4096}`)) {
		t.Fatalf("usage not written: %s", data)
	}
	fast := state.UnmarshalFastOnly(data, nil)
	ref, err := state.UnmarshalReference(data)
	if fast == nil || err != nil {
		t.Fatalf("fast path %v, reference error %v", fast, err)
	}
	for name, got := range map[string]*state.Run{"fast path": fast, "reference": ref} {
		if u := got.Usage(); u.CacheWriteTokens != 4096 || u.InputTokens != 5000 {
			t.Errorf("%s: usage %+v", name, u)
		}
	}
}
