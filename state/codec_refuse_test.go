package state_test

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/statetest"
)

// unmarshalBoth decodes data with Unmarshal (fast path first) and with its
// encoding/json reference, and fails t unless both fail alike.
func unmarshalBoth(t *testing.T, data []byte) error {
	t.Helper()
	r, err := state.Unmarshal(data)
	rr, rerr := state.UnmarshalReference(data)
	if r != nil || rr != nil {
		t.Fatalf("Unmarshal = %v, %v; reference %v, %v: want errors", r, err, rr, rerr)
	}
	if err.Error() != rerr.Error() {
		t.Fatalf("Unmarshal error %v, reference %v", err, rerr)
	}
	return err
}

func wantDecodeError(t *testing.T, err error, path string, causes ...error) {
	t.Helper()
	var de *state.DecodeError
	if !errors.As(err, &de) || de.Path != path {
		t.Fatalf("error %v: path %q, want a *DecodeError at %q", err, pathOf(err), path)
	}
	for _, c := range causes {
		if !errors.Is(err, c) {
			t.Fatalf("error %v does not wrap %v", err, c)
		}
	}
}

// TestUnmarshalRefusesNegativeUsage: Marshal never writes a negative
// counter, so one comes from a corrupted or forged checkpoint (issue 13.1).
func TestUnmarshalRefusesNegativeUsage(t *testing.T) {
	t.Parallel()
	good := mustMarshal(t, statetest.SampleRun(t, "run_1"))
	for _, field := range []string{"requests", "input_tokens", "output_tokens", "reasoning_tokens", "cached_tokens", "cache_write_tokens"} {
		t.Run(field, func(t *testing.T) {
			t.Parallel()
			bad := edit(t, good, func(_, r map[string]any) { at(r, "usage")[field] = -5 })
			if state.UnmarshalFastOnly(bad, nil) != nil {
				t.Fatal("the fast path accepted a negative counter")
			}
			wantDecodeError(t, unmarshalBoth(t, bad), "$.run.usage."+field, state.ErrInvalid)
		})
	}
}

// twoResponses returns a run whose two responses reuse one call ID, each
// call answered once: valid history.
func twoResponses(t *testing.T) *state.Run {
	t.Helper()
	r := state.NewRun("run_1", "assistant")
	r.AddInput(state.UserMessage("go"))
	for i := range 2 {
		first := r.Reserve(2)
		if err := r.Record(
			state.ToolCall("fc", "call_1", "lookup", `{"n":`+string(rune('1'+i))+`}`).WithSeq(first),
			state.ToolOutput("call_1", "lookup", "found").WithSeq(first+1),
		); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// TestUnmarshalRefusesSecondOutput: each call has exactly one output; the
// Responses API refuses history with a second (issue 13.2). A call ID
// reused by a later response is another call, with an output of its own.
func TestUnmarshalRefusesSecondOutput(t *testing.T) {
	t.Parallel()
	reused := mustMarshal(t, twoResponses(t))
	if _, err := state.Unmarshal(reused); err != nil {
		t.Fatalf("Unmarshal(a call ID reused across responses) = %v", err)
	}
	for _, tt := range []struct {
		name   string
		output state.Item
	}{
		{"tool output", state.ToolOutput("call_1", "lookup", "again")},
		{"handoff output", state.HandoffOutput("call_1", "lookup", "again")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := twoResponses(t)
			seq := r.Reserve(1)
			if err := r.Record(tt.output.WithSeq(seq)); err != nil {
				t.Fatal(err)
			}
			err := unmarshalBoth(t, mustMarshal(t, r))
			wantDecodeError(t, err, "$.run.items[5]", state.ErrInvalid, state.ErrDuplicateOutput)
		})
	}
	t.Run("pending call already answered", func(t *testing.T) {
		t.Parallel()
		r := statetest.SampleRun(t, "run_1")
		seq := r.Reserve(1)
		if err := r.Record(state.ToolOutput("call_rm", "delete_file", "deleted").WithSeq(seq)); err != nil {
			t.Fatal(err)
		}
		wantDecodeError(t, unmarshalBoth(t, mustMarshal(t, r)), "$.run.pending[0]", state.ErrInvalid, state.ErrDuplicateOutput)
	})
}

// TestFirstDecisionStands: one rule for repeated exact decisions, the
// first stands, live and in a checkpoint (issue 13.3).
func TestFirstDecisionStands(t *testing.T) {
	t.Parallel()
	r := statetest.SampleRun(t, "run_1")
	a := r.Pending()[0]
	approved := state.Decision{Tool: a.Tool, CallID: a.CallID, Fingerprint: a.Fingerprint(), Verdict: state.Approved}
	rejected := approved
	rejected.Verdict = state.Rejected
	r.AddDecision(approved)
	r.AddDecision(rejected)
	if d, exact, ok := r.DecisionFor(a.Tool, a.CallID); !ok || !exact || d.Verdict != state.Approved {
		t.Fatalf("DecisionFor = %+v, %v, %v; want the first, approved", d, exact, ok)
	}
	if err := r.Reject(a.CallID, "no"); !errors.Is(err, state.ErrAlreadyDecided) {
		t.Fatalf("Reject after approval = %v, want ErrAlreadyDecided", err)
	}
	got := mustUnmarshal(t, mustMarshal(t, r))
	if d, _, _ := got.DecisionFor(a.Tool, a.CallID); d.Verdict != state.Approved {
		t.Fatalf("after a round trip DecisionFor = %+v, want approved", d)
	}

	good := mustMarshal(t, statetest.SampleRun(t, "run_1"))
	withDecisions := func(ds ...state.Decision) []byte {
		return edit(t, good, func(_, run map[string]any) {
			var list []any
			for _, d := range ds {
				list = append(list, map[string]any{"tool": d.Tool, "call_id": d.CallID, "fingerprint": d.Fingerprint, "verdict": d.Verdict.String()})
			}
			run["decisions"] = list
		})
	}
	contradictory := withDecisions(approved, rejected)
	if state.UnmarshalFastOnly(contradictory, nil) != nil {
		t.Fatal("the fast path accepted contradictory decisions")
	}
	wantDecodeError(t, unmarshalBoth(t, contradictory), "$.run.decisions[1]", state.ErrInvalid, state.ErrAlreadyDecided)
	if _, err := state.Unmarshal(withDecisions(approved, approved)); err != nil {
		t.Fatalf("Unmarshal(a decision repeated as it was) = %v", err)
	}
}

// TestSyntaxErrorsHavePaths: a syntax-class error names the value it is
// in, as Unmarshal's doc promises (issue 13.4).
func TestSyntaxErrorsHavePaths(t *testing.T) {
	t.Parallel()
	good := mustMarshal(t, statetest.SampleRun(t, "run_1"))
	indented := mustMarshal(t, statetest.SampleRun(t, "run_1"), state.WithIndent())
	replace := func(data []byte, old, new string) []byte {
		t.Helper()
		if !bytes.Contains(data, []byte(old)) {
			t.Fatalf("no %q in the checkpoint", old)
		}
		return bytes.Replace(data, []byte(old), []byte(new), 1)
	}
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	tests := []struct {
		name, path string
		give       []byte
	}{
		{"NaN", "$.run.usage.input_tokens", replace(good, `"input_tokens":120`, `"input_tokens":NaN`)},
		{"NaN indented", "$.run.usage.input_tokens", replace(indented, `"input_tokens": 120`, `"input_tokens": NaN`)},
		{"garbage in an item", "$.run.items[3].raw.arguments", replace(good, `"arguments":"{\"dir\"`, `"arguments":#"{\"dir\"`)},
		{"garbage between items", "$.run.items[2]", replace(good, `},{"seq":4`, `}#{"seq":4`)},
		{"bad key", "$.run.usage", replace(good, `"output_tokens":`, `output_tokens:`)},
		{"truncated in a string", "$.run.agent", good[:bytes.Index(good, []byte(`"assistant"`))+4]},
		{"deep nesting", "$.run.extension.deep" + strings.Repeat("[0]", 29) + "…", replace(good, `"extension":{`, `"extension":{"deep":`+deep+`,`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := unmarshalBoth(t, tt.give)
			wantDecodeError(t, err, tt.path, state.ErrMalformed)
		})
	}
}

// TestRefusalSkipsItemsTheFastPathReads refuses a checkpoint for an
// unknown member of its last item as the reference refuses it, with a
// fraction of the reference's allocations: looking for the error, Unmarshal
// does not decode again the items its fast path reads whole. An item the
// fast path does not read (a member name written with an escape, which
// encoding/json reads) is still decoded, and found sound.
func TestRefusalSkipsItemsTheFastPathReads(t *testing.T) { // not parallel: AllocsPerRun
	good := mustMarshal(t, benchRun(t, 300))
	replace := func(data []byte, at int, from, to string) []byte {
		t.Helper()
		if !bytes.HasPrefix(data[at:], []byte(from)) {
			t.Fatalf("no %s at %d", from, at)
		}
		return slices.Concat(data[:at], []byte(to), data[at+len(from):])
	}
	odd := replace(good, bytes.Index(good, []byte(`"kind":`)), `"kind":`, `"\u006bind":`)
	if state.UnmarshalFastOnly(odd, nil) != nil {
		t.Fatal("the fast path read a member name written with an escape; the test needs one it does not")
	}
	if _, err := state.UnmarshalReference(odd); err != nil {
		t.Fatalf("encoding/json refused a member name written with an escape: %v", err)
	}
	name := `"name":"lookup"`
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"plain", replace(good, bytes.LastIndex(good, []byte(name)), name, `"nmae":"lookup"`)},
		{"escaped first item", replace(odd, bytes.LastIndex(odd, []byte(name)), name, `"nmae":"lookup"`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := unmarshalBoth(t, tc.data)
			if p := pathOf(err); !strings.HasPrefix(p, "$.run.items[") {
				t.Fatalf("error %v at %q, want it at the last item", err, p)
			}
			fast := testing.AllocsPerRun(3, func() { _, _ = state.Unmarshal(tc.data) })
			ref := testing.AllocsPerRun(3, func() { _, _ = state.UnmarshalReference(tc.data) })
			if fast > ref/2 {
				t.Errorf("Unmarshal made %.0f allocations refusing it, the reference %.0f: want at most half", fast, ref)
			}
		})
	}
}
