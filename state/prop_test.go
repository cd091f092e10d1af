package state_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/turnkit/turnkit/state"
)

// genRun builds a run the way the runner does: input, then responses whose
// calls are answered, rejected or left pending on the last one, decisions,
// guardrail results and the rest of the bookkeeping.
func genRun(t *rapid.T) (*state.Run, []string) {
	text := rapid.StringMatching(`[a-zA-Z0-9 "\\é{}\n]{0,12}`)
	r := state.NewRun(rapid.StringMatching(`run_[a-z0-9]{1,8}`).Draw(t, "id"), rapid.SampledFrom([]string{"a", "b"}).Draw(t, "agent"))
	r.SetMaxTurns(rapid.IntRange(-1, 20).Draw(t, "maxTurns"))
	if rapid.Bool().Draw(t, "history") {
		var hist []state.Item
		for i := range rapid.IntRange(0, 3).Draw(t, "nhist") {
			hist = append(hist, state.UserMessage(text.Draw(t, "hist")).WithSeq(int64(i+1)))
		}
		r.SetHistory(hist)
	}
	r.AddInput(state.UserMessage(text.Draw(t, "input")))
	responses := rapid.IntRange(0, 4).Draw(t, "responses")
	call := 0
	for resp := range responses {
		r.SetTurn(resp + 1)
		var items []state.Item
		for range rapid.IntRange(0, 4).Draw(t, "nitems") {
			switch rapid.IntRange(0, 3).Draw(t, "kind") {
			case 0:
				items = append(items, state.AssistantMessage(fmt.Sprintf("msg_%d", len(items)), text.Draw(t, "msg")))
			case 1:
				items = append(items, state.Reasoning("", text.Draw(t, "summary")))
			default:
				call++
				name := rapid.SampledFrom([]string{"safe", "danger", "transfer_to_b"}).Draw(t, "tool")
				it := state.ToolCall("fc", fmt.Sprintf("call_%d", call), name, `{"x":`+fmt.Sprint(call)+`}`)
				if name == "transfer_to_b" {
					it, _ = it.WithKind(state.KindHandoffCall)
				}
				items = append(items, it)
			}
		}
		ncalls := 0
		for _, it := range items {
			if it.Kind().IsCall() {
				ncalls++
			}
		}
		first := r.Reserve(len(items) + ncalls)
		for i := range items {
			items[i] = items[i].WithSeq(first + int64(i))
		}
		if err := r.Record(items...); err != nil {
			t.Fatal(err)
		}
		end := first + int64(len(items))
		r.SetResponse(state.Boundary{Start: first, End: end, OutputsEnd: end + int64(ncalls)})
		k := int64(0)
		last := resp == responses-1
		for _, it := range items {
			if !it.Kind().IsCall() {
				continue
			}
			out := end + k
			k++
			if last && it.Kind() == state.KindToolCall && rapid.Bool().Draw(t, "pending") {
				r.AddPending(state.Approval{Tool: it.Name(), CallID: it.CallID(), Arguments: it.Text(), Agent: r.Agent(), Seq: it.Seq(), OutputSeq: out})
				continue
			}
			o := state.ToolOutput(it.CallID(), it.Name(), text.Draw(t, "output"))
			if rapid.Bool().Draw(t, "parts") {
				o = state.ToolOutputContent(it.CallID(), it.Name(), state.TextPart(text.Draw(t, "output")), state.ImageURL(text.Draw(t, "image"), ""))
			}
			if it.Kind() == state.KindHandoffCall {
				o, _ = o.WithKind(state.KindHandoffOutput)
			}
			if err := r.Record(o.WithSeq(out)); err != nil {
				t.Fatal(err)
			}
		}
		if rapid.Bool().Draw(t, "replaceContext") {
			r.ReplaceContext([]state.Item{state.SystemMessage(text.Draw(t, "filtered"))})
		}
	}
	for _, a := range r.Pending() {
		switch rapid.IntRange(0, 2).Draw(t, "decide") {
		case 1:
			_ = r.Approve(a.CallID)
		case 2:
			_ = r.Reject(a.CallID, text.Draw(t, "why"))
		}
	}
	if rapid.Bool().Draw(t, "always") {
		_ = r.ApproveAlways(rapid.SampledFrom([]string{"safe", "danger"}).Draw(t, "alwaysTool"))
	}
	for range rapid.IntRange(0, 2).Draw(t, "guards") {
		r.AddGuardrailResult(state.GuardrailResult{
			Name: text.Draw(t, "guard"), Stage: state.GuardrailStage(rapid.IntRange(1, 4).Draw(t, "stage")),
			Turn: r.Turn(), Tripped: rapid.Bool().Draw(t, "tripped"), Info: json.RawMessage(`{"k":[1,2]}`),
		})
	}
	r.AddUsage(state.Usage{
		Requests: int64(responses), InputTokens: rapid.Int64Range(0, 1e6).Draw(t, "in"),
		CacheWriteTokens: rapid.SampledFrom([]int64{0, 0, 1, 1 << 40}).Draw(t, "cacheWrites"),
	})
	r.SetVersion(rapid.Int64Range(0, 9).Draw(t, "version"))
	if rapid.Bool().Draw(t, "session") {
		r.SetSessionID("s")
		r.SetSessionWatermark(rapid.Int64Range(0, r.NextSeq()-1).Draw(t, "watermark"))
		r.SetTraceContext(map[string]string{"traceparent": text.Draw(t, "trace")})
	}
	keys := []string{"x/a", "x/b"}
	for _, k := range keys {
		if rapid.Bool().Draw(t, "ext") {
			r.SetExtension(k, json.RawMessage(`{"v":`+fmt.Sprint(len(k))+`}`))
		}
	}
	if len(r.Pending()) == 0 && rapid.Bool().Draw(t, "finish") {
		r.Finish(text.Draw(t, "final"))
	}
	return r, keys
}

// TestRoundTripProperty: Unmarshal(Marshal(r)) equals r for generated
// runs, read through every accessor.
func TestRoundTripProperty(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		r, keys := genRun(t)
		data, err := state.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := state.Unmarshal(data)
		if err != nil {
			t.Fatalf("Unmarshal(%s): %v", data, err)
		}
		if d := cmp.Diff(snap(r, keys...), snap(got, keys...)); d != "" {
			t.Fatalf("round trip (-want +got):\n%s", d)
		}
	})
}
