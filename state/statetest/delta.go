package statetest

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/state"
)

// testDeltaSaves grows a run over many saves, loading it after each one,
// and checks that every load is the live run: the store keeps exactly what
// a whole checkpoint would, although each save writes only what changed.
// It covers the shapes a save can take: items appended in order, an output
// inserted before the last item (decided on resume), a context replaced
// midway (a handoff filter), a save with nothing new, and saves made from
// a loaded copy, which build on what the store holds.
func testDeltaSaves(t *testing.T, s state.Store) {
	r := SampleRun(t, newID(t))
	save(t, s, r)
	check := func(step string) {
		t.Helper()
		if d := Diff(t, load(t, s, r.ID()), r); d != "" {
			t.Fatalf("%s: Load differs from the live run (-want +got):\n%s", step, d)
		}
	}
	check("first save")
	for turn := range 12 {
		first := runcore.Reserve(r, 2)
		call := fmt.Sprintf("call_t%d", turn)
		must(t, runcore.Record(r, state.ToolCall("fc_"+call, call, "list_files", `{"dir":"/"}`).WithSeq(first)))
		runcore.SetResponse(r, state.Boundary{Start: first, End: first + 1, OutputsEnd: first + 2})
		runcore.SetTurn(r, 3+turn)
		save(t, s, r)
		check(fmt.Sprintf("turn %d, call saved", turn))
		must(t, runcore.Record(r, state.ToolOutput(call, "list_files", `["a"]`).WithSeq(first+1)))
		runcore.AddUsage(r, state.Usage{Requests: 1, InputTokens: 10})
		runcore.AddModelCall(r, state.ModelCall{Turn: 3 + turn, Agent: "assistant", Model: "m", ResponseID: "resp_" + call,
			Seq: first, Usage: state.Usage{Requests: 1, InputTokens: 10}})
		r.AddGuardrailResult(state.GuardrailResult{Name: "args", Stage: state.StageToolInput, Turn: 3 + turn, CallID: call})
		if turn == 5 {
			runcore.ReplaceContext(r, []state.Item{state.UserMessage("filtered").WithSeq(1)})
		}
		save(t, s, r)
		check(fmt.Sprintf("turn %d, output saved", turn))
	}
	save(t, s, r) // nothing new
	check("empty save")

	// The pending call of SampleRun is answered on resume: its output goes
	// before the items recorded since.
	got := load(t, s, r.ID())
	must(t, got.Approve("call_rm"))
	p := got.Pending()
	if len(p) != 1 {
		t.Fatalf("pending after load: %+v", p)
	}
	must(t, runcore.Record(got, state.ToolOutput("call_rm", "delete_file", `"done"`).WithSeq(p[0].OutputSeq)))
	runcore.ResolvePending(got, "call_rm")
	got.SetExtension("example.com/counter", json.RawMessage(`{"n":9}`))
	save(t, s, got)
	if d := Diff(t, load(t, s, r.ID()), got); d != "" {
		t.Fatalf("save from a loaded copy (-want +got):\n%s", d)
	}

	// A run decoded from a whole checkpoint at the stored version saves
	// in full over what is stored.
	data, err := state.Marshal(got)
	must(t, err)
	back, err := state.Unmarshal(data)
	must(t, err)
	first := runcore.Reserve(back, 1)
	must(t, runcore.Record(back, state.AssistantMessage("msg_end", "done").WithSeq(first)))
	runcore.Finish(back, "done")
	save(t, s, back)
	if d := Diff(t, load(t, s, r.ID()), back); d != "" {
		t.Fatalf("save of an unmarshalled run (-want +got):\n%s", d)
	}
}
