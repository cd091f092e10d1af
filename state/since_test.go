package state_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/state"
)

func TestGuardrailResultsSince(t *testing.T) {
	run := state.NewRun("r", "a")
	run.AddGuardrailResult(state.GuardrailResult{Name: "first", Stage: state.StageInput, Turn: 1})
	n := run.GuardrailCount()
	run.AddGuardrailResult(state.GuardrailResult{Name: "second", Stage: state.StageOutput, Turn: 1, Info: []byte(`{"x":1}`)})

	got := run.GuardrailResultsSince(n)
	want := []state.GuardrailResult{{Name: "second", Stage: state.StageOutput, Turn: 1, Info: []byte(`{"x":1}`)}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("GuardrailResultsSince(%d) mismatch (-want +got):\n%s", n, diff)
	}
	got[0].Info[0] = 'X'
	if again := run.GuardrailResultsSince(n); string(again[0].Info) != `{"x":1}` {
		t.Fatalf("GuardrailResultsSince shares Info with the run: %s", again[0].Info)
	}
	if got := run.GuardrailResultsSince(run.GuardrailCount()); got != nil {
		t.Fatalf("GuardrailResultsSince(count) = %v, want nil", got)
	}
	if got := len(run.GuardrailResultsSince(-1)); got != 2 {
		t.Fatalf("len(GuardrailResultsSince(-1)) = %d, want 2", got)
	}
}
