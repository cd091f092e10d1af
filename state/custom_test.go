package state_test

import (
	"testing"

	"github.com/turnkit/turnkit/state"
)

func TestCustomToolItems(t *testing.T) {
	call := state.CustomCall("ctc_1", "call_1", "run_sql", "SELECT \"a\" < 1;\n")
	if !call.Kind().IsCall() || call.CallID() != "call_1" || call.Name() != "run_sql" || call.Text() != "SELECT \"a\" < 1;\n" {
		t.Errorf("call %v %q", call, call.Text())
	}
	out := state.CustomOutput("call_1", "run_sql", "1 row")
	if !out.Kind().IsOutput() || out.CallID() != "call_1" || out.Text() != "1 row" {
		t.Errorf("output %v %q", out, out.Text())
	}
	if want := `{"type":"custom_tool_call_output","call_id":"call_1","output":"1 row"}`; string(out.Raw()) != want {
		t.Errorf("output raw %s, want %s", out.Raw(), want)
	}
	for _, it := range []state.Item{call, out} {
		back, err := state.ParseItem(it.Kind(), it.Raw())
		if err != nil {
			t.Fatal(err)
		}
		if it.Kind().IsOutput() {
			back = back.WithName(it.Name())
		}
		if !back.Equal(it) || back.Text() != it.Text() {
			t.Errorf("ParseItem(%s) = %v %q", it.Raw(), back, back.Text())
		}
	}
	parts, err := state.ParseItem(state.KindCustomOutput, []byte(`{"type":"custom_tool_call_output","call_id":"c","output":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]}`))
	if err != nil || parts.Text() != "ab" {
		t.Errorf("output parts: %q, %v", parts.Text(), err)
	}
	if _, ok := call.WithKind(state.KindToolCall); ok {
		t.Error("a custom call became a function call")
	}

	// A checkpoint with a pending custom call round-trips.
	r := state.NewRun("run-custom", "agent")
	r.SetMaxTurns(10)
	first := r.Reserve(2)
	if err := r.Record(call.WithSeq(first)); err != nil {
		t.Fatal(err)
	}
	r.SetResponse(state.Boundary{Start: first, End: first + 1, OutputsEnd: first + 2})
	r.AddPending(state.Approval{Tool: "run_sql", CallID: "call_1", Arguments: call.Text(), Agent: "agent", Seq: first, OutputSeq: first + 1})
	b, err := state.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	back, err := state.Unmarshal(b)
	if err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if p := back.Pending(); len(p) != 1 || p[0].Arguments != call.Text() {
		t.Errorf("pending %+v", p)
	}
}
