package state_test

import (
	"errors"
	"testing"

	"github.com/turnkit/turnkit/state"
)

// typedRaws are hosted calls and opaque items as the Responses API sends
// them (compacted).
var typedRaws = []struct {
	kind           state.Kind
	raw            string
	name, id, text string
}{
	{state.KindHostedCall, `{"id":"ws_1","type":"web_search_call","status":"completed","action":{"type":"search","query":"go \u003c 1.26"}}`, "web_search_call", "ws_1", "completed"},
	{state.KindHostedCall, `{"id":"mcp_1","type":"mcp_call","server_label":"deepwiki","name":"ask","arguments":"{\"q\":1}","output":"ok","status":"completed"}`, "mcp_call", "mcp_1", "completed"},
	{state.KindHostedCall, `{"type":"local_shell_call","call_id":"ls_1","action":{"type":"exec","command":["ls"]},"status":"in_progress"}`, "local_shell_call", "ls_1", "in_progress"},
	{state.KindOpaque, `{"type":"hologram_call","id":"h_1","status":"completed","payload":{"depth":[1,2,{"x":null}]}}`, "hologram_call", "", "completed"},
	{state.KindOpaque, `{"type":"compaction","encrypted_content":"xyz"}`, "compaction", "", ""},
}

func TestTypedItemsParse(t *testing.T) {
	for _, tc := range typedRaws {
		it, err := state.ParseItem(tc.kind, []byte(tc.raw))
		if err != nil {
			t.Fatalf("ParseItem(%s, %s): %v", tc.kind, tc.raw, err)
		}
		if it.Kind() != tc.kind || it.Name() != tc.name || it.CallID() != tc.id || it.Text() != tc.text || string(it.Raw()) != tc.raw {
			t.Errorf("ParseItem(%s) = kind %s name %q id %q text %q raw %s; want %s %q %q %q, raw as given",
				tc.raw, it.Kind(), it.Name(), it.CallID(), it.Text(), it.Raw(), tc.kind, tc.name, tc.id, tc.text)
		}
		if it.Kind().IsCall() || it.Kind().IsOutput() {
			t.Errorf("%s: a hosted call or opaque item expects no output from turnkit", it.Kind())
		}
		back, err := state.ParseKind(it.Kind().String())
		if err != nil || back != tc.kind {
			t.Errorf("ParseKind(%q) = %v, %v", it.Kind().String(), back, err)
		}
	}
}

func TestTypedItemsRefused(t *testing.T) {
	for _, raw := range []string{
		`{"id":"x"}`, `{"type":""}`, `[]`, `"web_search_call"`, `{"type":"web_search_call"`,
		`{"type":"message","role":"assistant","content":"hi"}`, `{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}`,
	} {
		for _, k := range []state.Kind{state.KindHostedCall, state.KindOpaque} {
			if _, err := state.ParseItem(k, []byte(raw)); err == nil {
				t.Errorf("ParseItem(%s, %s) = nil error", k, raw)
			}
		}
	}
}

// typedRun returns a run whose items mix every kind parseTyped reads with
// function calls and messages, and the items it recorded.
func typedRun(t testing.TB) *state.Run {
	r, _, _ := typedRunItems(t)
	return r
}

func typedRunItems(t testing.TB) (r *state.Run, in []state.Item, items []state.Item) {
	t.Helper()
	r = state.NewRun("run-typed", "agent")
	r.SetMaxTurns(10)
	in = r.AddInput(state.UserMessage("find it"))
	items = []state.Item{state.Reasoning("rs_1", "thinking")}
	for _, tc := range typedRaws {
		it, err := state.ParseItem(tc.kind, []byte(tc.raw))
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, it)
	}
	req, err := state.ParseItem(state.KindMCPApprovalRequest, []byte(mcpRequest))
	if err != nil {
		t.Fatal(err)
	}
	items = append(items, state.ToolCall("fc_1", "call_1", "lookup", `{}`), req, state.CustomCall("ctc_1", "call_c", "run_sql", "SELECT 1;"))
	first := r.Reserve(len(items) + 3)
	for i := range items {
		items[i] = items[i].WithSeq(first + int64(i))
	}
	next := first + int64(len(items))
	items = append(items,
		state.ToolOutput("call_1", "lookup", "42").WithSeq(next),
		state.MCPApprovalResponse("mcpr_1", req.Name(), false, "no").WithSeq(next+1),
		state.CustomOutput("call_c", "run_sql", "1").WithSeq(next+2))
	if err := r.Record(items...); err != nil {
		t.Fatal(err)
	}
	return r, in, items
}

// TestTypedItemsCheckpoint: hosted calls, opaque items, MCP approvals and
// custom tool calls survive a checkpoint round trip unchanged, in their
// positions, among other items, on the fast path and the reference path.
func TestTypedItemsCheckpoint(t *testing.T) {
	r, in, items := typedRunItems(t)
	b, err := state.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	back, err := state.Unmarshal(b)
	if err != nil {
		t.Fatalf("Unmarshal: %v\n%s", err, b)
	}
	want := append(append([]state.Item(nil), in...), items...)
	got := back.Items().Slice()
	if len(got) != len(want) {
		t.Fatalf("got %d items, want %d", len(got), len(want))
	}
	for i := range want {
		if !got[i].Equal(want[i]) || got[i].Text() != want[i].Text() || got[i].CallID() != want[i].CallID() {
			t.Errorf("item %d = %v %s, want %v %s", i, got[i], got[i].Raw(), want[i], want[i].Raw())
		}
	}
	b2, err := state.Marshal(back)
	if err != nil || string(b2) != string(b) {
		t.Errorf("second Marshal differs (err %v)", err)
	}
}

func TestTypedItemsBadCheckpoint(t *testing.T) {
	r := state.NewRun("run-typed", "agent")
	r.SetMaxTurns(10)
	it, _ := state.HostedCall([]byte(`{"type":"web_search_call","id":"ws_1","status":"completed"}`))
	if err := r.Record(it.WithSeq(r.Reserve(1))); err != nil {
		t.Fatal(err)
	}
	b, err := state.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	bad := []byte(string(b))
	i := indexOf(bad, `"type":"web_search_call"`)
	copy(bad[i:], `"typo":"web_search_call"`)
	var de *state.DecodeError
	if _, err := state.Unmarshal(bad); !errors.As(err, &de) {
		t.Fatalf("Unmarshal of a hosted call without type = %v, want a *state.DecodeError", err)
	}
}

func indexOf(b []byte, s string) int {
	for i := 0; i+len(s) <= len(b); i++ {
		if string(b[i:i+len(s)]) == s {
			return i
		}
	}
	panic("not found: " + s)
}

// TestTypedItemsFastPath: a checkpoint with typed items decodes on the fast
// path, to what the reference path decodes.
func TestTypedItemsFastPath(t *testing.T) {
	for _, opts := range [][]state.MarshalOption{nil, {state.WithIndent()}} {
		data, err := state.Marshal(typedRun(t), opts...)
		if err != nil {
			t.Fatal(err)
		}
		fast := state.UnmarshalFastOnly(data, nil)
		if fast == nil {
			t.Fatal("the fast path gave up on typed items")
		}
		ref, err := state.UnmarshalReference(data)
		if err != nil {
			t.Fatal(err)
		}
		fb, _ := state.MarshalReference(fast)
		rb, _ := state.MarshalReference(ref)
		if string(fb) != string(rb) {
			t.Errorf("fast path:\n%s\nreference:\n%s", fb, rb)
		}
		for i, it := range fast.Items().Slice() {
			r := ref.Items().At(i)
			if it.Text() != r.Text() || it.CallID() != r.CallID() || it.Name() != r.Name() {
				t.Errorf("item %d: fast %v %q, reference %v %q", i, it, it.Text(), r, r.Text())
			}
		}
	}
}
