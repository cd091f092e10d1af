package state_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/statetest"
)

// Issue 27: Unmarshal accepted checkpoints that Marshal then refused or
// that the format does not allow, found by FuzzUnmarshal. Each input here
// is also in testdata/fuzz, so the fuzzers start from it.

// TestUnmarshalRefusesIssue27Input is the fuzzer's minimized input: keys
// in other letter case (which the encoding/json fallback matched), an
// empty run ID and a guardrail result with no stage, which Marshal then
// refused after the run's next model call.
func TestUnmarshalRefusesIssue27Input(t *testing.T) {
	t.Parallel()
	data := []byte(`{"sChemA":"turnkit.run","version":1,"run":{"id":"","neXt_seq":1,"guArdrAils":[{}]}}`)
	wantDecodeError(t, unmarshalBoth(t, data), "$.sChemA", state.ErrMalformed, state.ErrKeyCase)
}

// TestUnmarshalRefusesWhatMarshalRefuses: every field is checked on load
// as strictly as on save, on both decoding paths.
func TestUnmarshalRefusesWhatMarshalRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, give, path string
	}{
		{"empty run ID", `{"schema":"turnkit.run","version":1,"run":{"id":"","next_seq":1}}`, "$.run.id"},
		{"guardrail without stage", `{"schema":"turnkit.run","version":1,"run":{"id":"r","next_seq":1,"guardrails":[{}]}}`, "$.run.guardrails[0].stage"},
		{"guardrail with null stage", `{"schema":"turnkit.run","version":1,"run":{"id":"r","next_seq":1,"guardrails":[{"name":"g","stage":"input"},{"name":"g","stage":null}]}}`, "$.run.guardrails[1].stage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			wantDecodeError(t, unmarshalBoth(t, []byte(tt.give)), tt.path, state.ErrInvalid)
		})
	}
}

// TestUnmarshalKeysMatchExactly: a key that names a field in other letter
// case, at any level of the format, fails on both paths with its path.
// encoding/json folds case, and also folds some non-ASCII letters (the
// Kelvin sign, the long s) to ASCII ones.
func TestUnmarshalKeysMatchExactly(t *testing.T) {
	t.Parallel()
	good := mustMarshal(t, statetest.SampleRun(t, "run_1"))
	signed := mustMarshal(t, statetest.SampleRun(t, "run_1"), state.WithSigningKey("golden", goldenKey))
	tests := []struct {
		name     string
		give     []byte
		old, new string
		path     string
	}{
		{"envelope", good, `"schema":`, `"SCHEMA":`, "$.SCHEMA"},
		{"envelope version", good, `"version":1,"run"`, `"Version":1,"run"`, "$.Version"},
		{"signature", signed, `"key_id":`, `"Key_id":`, "$.signature.Key_id"},
		{"run", good, `"next_seq":`, `"neXt_seq":`, "$.run.neXt_seq"},
		{"run, escaped", good, `"next_seq":`, `"ne\u0058t_seq":`, "$.run.neXt_seq"},
		{"item", good, `{"seq":1,`, `{"Seq":1,`, "$.run.input[0].Seq"},
		{"item, Kelvin sign", good, `"kind":"user_message"`, "\"\u212aind\":\"user_message\"", "$.run.input[0].\u212aind"},
		{"item, long s", good, `{"seq":1,`, "{\"\u017feq\":1,", "$.run.input[0].\u017feq"},
		{"boundary", good, `"response":{"start"`, `"response":{"Start"`, "$.run.response.Start"},
		{"pending approval", good, `"call_id":"call_rm","arguments"`, `"CALL_ID":"call_rm","arguments"`, "$.run.pending[0].CALL_ID"},
		{"guardrail result", good, `"stage":"input"`, `"StAge":"input"`, "$.run.guardrails[0].StAge"},
		{"usage", good, `"usage":{"requests"`, `"usage":{"Requests"`, "$.run.usage.Requests"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			data := bytes.Replace(tt.give, []byte(tt.old), []byte(tt.new), 1)
			if bytes.Equal(data, tt.give) {
				t.Fatalf("edit %q does not apply", tt.old)
			}
			if state.UnmarshalFastOnly(data, nil) != nil {
				t.Fatal("the fast path accepted a key in other letter case")
			}
			wantDecodeError(t, unmarshalBoth(t, data), tt.path, state.ErrMalformed, state.ErrKeyCase)
		})
	}
}

// TestUnmarshalKeysEscapedExactly: a key written with escapes that spell
// the field's name exactly is the field's key; JSON allows it.
func TestUnmarshalKeysEscapedExactly(t *testing.T) {
	t.Parallel()
	good := mustMarshal(t, statetest.SampleRun(t, "run_1"))
	data := bytes.Replace(good, []byte(`"next_seq":`), []byte(`"ne\u0078t_seq":`), 1)
	got := mustUnmarshal(t, data)
	if !bytes.Equal(mustMarshal(t, got), good) {
		t.Fatalf("an escaped exact key decoded to another run")
	}
}

// TestDecisionWithoutVerdictRefused: a decision needs a verdict, on both
// paths (Marshal refuses one without).
func TestDecisionWithoutVerdictRefused(t *testing.T) {
	t.Parallel()
	data := []byte(`{"schema":"turnkit.run","version":1,"run":{"id":"r","next_seq":1,"decisions":[{"tool":"t","always":true}]}}`)
	wantDecodeError(t, unmarshalBoth(t, data), "$.run.decisions[0]", state.ErrInvalid)
}

// TestMarshalRefusesEmptyRunID: a run without an ID is refused on save as
// on load, by Marshal and by Delta, with ErrNoRunID.
func TestMarshalRefusesEmptyRunID(t *testing.T) {
	t.Parallel()
	r := state.NewRun("", "a")
	if _, err := state.Marshal(r); !errors.Is(err, state.ErrNoRunID) {
		t.Errorf("Marshal = %v, want ErrNoRunID", err)
	}
	if _, err := r.Delta(); !errors.Is(err, state.ErrNoRunID) {
		t.Errorf("Delta = %v, want ErrNoRunID", err)
	}
}

// TestParseItemKeysMatchExactly: the members of an item's JSON that
// ParseItem reads match exactly too, on both paths: a call whose
// "CALL_ID" the API would not read is no call of "c".
func TestParseItemKeysMatchExactly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		kind state.Kind
		raw  string
	}{
		{"call ID", state.KindToolCall, `{"type":"function_call","CALL_ID":"c","name":"x","arguments":"{}"}`},
		{"type", state.KindUserMessage, `{"Type":"message","role":"user","content":"hi"}`},
		{"content part", state.KindUserMessage, `{"type":"message","role":"user","content":[{"type":"input_text","Text":"hi"}]}`},
		{"output part", state.KindToolOutput, `{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","TEXT":"ok"}]}`},
		{"summary", state.KindReasoning, `{"type":"reasoning","summary":[{"type":"summary_text","teXt":"why"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, ok := state.ParseItemFastOnly(tt.kind, []byte(tt.raw)); ok {
				t.Fatal("the fast path accepted a key in other letter case")
			}
			for _, parse := range []func(state.Kind, []byte) (state.Item, error){state.ParseItem, state.ParseItemReference} {
				if _, err := parse(tt.kind, []byte(tt.raw)); !errors.Is(err, state.ErrKeyCase) {
					t.Errorf("ParseItem(%s) = %v, want ErrKeyCase", tt.raw, err)
				}
			}
		})
	}
	// In a checkpoint, the item's path says where.
	data := []byte(`{"schema":"turnkit.run","version":1,"run":{"id":"r","next_seq":2,"items":[{"seq":1,"kind":"tool_call","raw":` + tests[0].raw + `}]}}`)
	wantDecodeError(t, unmarshalBoth(t, data), "$.run.items[0].raw", state.ErrMalformed, state.ErrKeyCase)
}
