package statetest

import (
	"testing"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/state"
)

// ElicitingRun returns a run paused on an MCP server's request for input
// (see [state.Elicitation]): its call of the tool "book" asked once,
// was answered (accepted, with content), was called again and asked a
// second, different question, which is pending. Its other call waits for
// an approval, as in [SampleRun].
func ElicitingRun(tb testing.TB, id string) *state.Run {
	tb.Helper()
	r := state.NewRun(id, "assistant")
	runcore.SetMaxTurns(r, 5)
	runcore.AddInput(r, state.UserMessage("book a table"))
	runcore.SetTurn(r, 1)
	first := runcore.Reserve(r, 4)
	book := state.ToolCall("fc_1", "call_book", "book", `{"when":"tonight"}`).WithSeq(first)
	pay := state.ToolCall("fc_2", "call_pay", "pay", `{"eur":40}`).WithSeq(first + 1)
	must(tb, runcore.RecordAll(r, book, pay))
	runcore.SetResponse(r, state.Boundary{Start: first, End: first + 2, OutputsEnd: first + 4})
	ask := func(msg, schema string) {
		runcore.AddPending(r, state.Approval{Tool: "book", CallID: "call_book", Arguments: book.Text(), Agent: "assistant",
			Seq: first, OutputSeq: first + 2,
			Elicitation: state.Elicitation{Server: "diner", Message: msg, Schema: schema}})
	}
	ask("How many guests? <\u2028>", `{"type":"object","properties":{"guests":{"type":"integer","minimum":1}},"required":["guests"]}`)
	must(tb, r.AnswerElicitation("call_book", state.Accept, `{ "guests": 4 }`))
	ask("Any allergies?", `{"type":"object","properties":{"allergies":{"type":"string"}}}`)
	runcore.AddPending(r, state.Approval{Tool: "pay", CallID: "call_pay", Arguments: pay.Text(), Agent: "assistant", Seq: first + 1, OutputSeq: first + 3})
	return r
}

// testElicitation: a run paused on an elicitation, with an answer to an
// earlier request, loads with its pending request and its answer; an
// answer recorded on the loaded copy and saved loads too, both paths of
// a save (a whole checkpoint, then a delta) carrying them.
func testElicitation(t *testing.T, s state.Store) {
	r := ElicitingRun(t, newID(t))
	save(t, s, r)
	got := load(t, s, r.ID())
	if d := Diff(t, got, r); d != "" {
		t.Fatalf("Load differs (-want +got):\n%s", d)
	}
	p := got.Pending()
	if len(p) != 2 || !p[0].IsElicitation() || p[0].Elicitation != r.Pending()[0].Elicitation || p[1].IsElicitation() {
		t.Fatalf("pending after load = %+v", p)
	}
	must(t, got.AnswerElicitation("call_book", state.Decline, ""))
	save(t, s, got)
	again := load(t, s, r.ID())
	if d := Diff(t, again, got); d != "" {
		t.Fatalf("Load after the answer differs (-want +got):\n%s", d)
	}
	d, ok := again.ElicitationAnswerFor("book", "call_book", p[0].Elicitation)
	if !ok || d.Answer.Action != state.Decline || d.Verdict != state.Rejected {
		t.Fatalf("answer to the second request after load = %+v, %v", d, ok)
	}
}
