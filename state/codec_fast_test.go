package state_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/statetest"
)

// The fast paths of Marshal, Unmarshal and ParseItem must give exactly
// what their encoding/json references give (state/export_test.go): the
// same bytes, the same runs and items, the same errors.

// trickyTexts are strings whose JSON needs every kind of escaping.
var trickyTexts = []string{
	"", "plain", `quote " and \ backslash`, "<b>&amp;</b>", "line\nbreak\ttab\r\b\f\x01\x1f\x7f",
	"é ü 日本", "\u2028 and \u2029", "bad utf8 \xff\xfe end", "surrogate \xed\xa0\x80", "emoji 😀",
	`{"json":[1,2,{"a":null}],"s":"x\"y"}`,
}

// trickyRaws are item JSON texts that the constructors do not write:
// whitespace, HTML characters, escapes, parts and refusals, unknown and
// null fields, and the shapes ParseItem must refuse or read exactly as
// encoding/json does.
var trickyRaws = []struct {
	kind state.Kind
	raw  string
}{
	{state.KindUserMessage, " {\n \"type\" : \"message\", \"role\": \"user\", \"content\": \"a < b & c\" } "},
	{state.KindUserMessage, `{"role":"user","content":null}`},
	{state.KindUserMessage, `{"type":null,"role":"user","content":[{"type":"input_text","text":"x"},null,{"refusal":"no"}]}`},
	{state.KindAssistantMessage, `{"type":"message","content":[{"text":"a","refusal":"b","extra":{"deep":[1,true,null,-2.5e3]}}]}`},
	{state.KindAssistantMessage, `{"type":"message","content":[{"refusal":"first","text":"second"}]}`},
	{state.KindAssistantMessage, `{"type":"message","content":"\u00e9\ud83d\ude00\ud800x\\n\/"}`},
	{state.KindAssistantMessage, `{"Type":"message","content":"case"}`},
	{state.KindAssistantMessage, `{"type":"message","CONTENT":"case"}`},
	{state.KindAssistantMessage, `{"type":"message","content":"a","content":"b"}`},
	{state.KindAssistantMessage, `{"\u0074ype":"message","content":"escaped key"}`},
	{state.KindAssistantMessage, `{"type":"message","content":{"text":"object"}}`},
	{state.KindAssistantMessage, `{"type":"message","content":[{"text":5}]}`},
	{state.KindAssistantMessage, `{"type":"message","content":"x","ſummary":[{"text":"long s folds to s"}]}`},
	{state.KindReasoning, `{"type":"reasoning","summary":[{"type":"summary_text","text":"one"},null,{"text":"three"}]}`},
	{state.KindReasoning, `{"type":"reasoning","summary":[{"text":null},{"text":"two","Text":"dup"}]}`},
	{state.KindReasoning, `{"type":"reasoning","summary":{}}`},
	{state.KindReasoning, `{"type":"reasoning"}`},
	{state.KindToolCall, `{"type":"function_call","call_id":"c1","name":"f","arguments":"{\"a\":\"<x>\"}","status":"completed"}`},
	{state.KindToolCall, `{"type":"function_call","call_id":"c1","name":"f","arguments":null}`},
	{state.KindToolCall, `{"type":"function_call","call_id":"","name":"f"}`},
	{state.KindToolCall, `{"type":"function_call","call_id":"c1","name":"f","arguments":{"a":1}}`},
	{state.KindHandoffCall, `{"type":"function_call","call_id":"c2","name":"transfer_to_b","arguments":"{}","content":[1,2]}`},
	{state.KindToolOutput, `{"type":"function_call_output","call_id":"c1","output":[{"type":"output_text","text":"part"}]}`},
	{state.KindToolOutput, `{"type":"function_call_output","call_id":"c1","output":"x","name":"ignored"}`},
	{state.KindToolOutput, `{"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"a"},{"type":"input_image","detail":"auto","image_url":"data:image/png;base64,AA=="},{"type":"input_file","filename":"f.pdf","file_data":"data:application/pdf;base64,AA=="},{"type":"input_text","text":"b"}]}`},
	{state.KindToolOutput, `{"type":"function_call_output","call_id":"c1","output":[{"image_url":"u","type":"input_image","text":"t","file_id":{"x":[1]}},null,{"type":"input_file"}]}`},
	{state.KindToolOutput, `{"type":"function_call_output","call_id":"c1","output":[]}`},
	{state.KindToolOutput, "{ \"output\" :\n [ {\"type\":\"input_image\",\"file_id\":\"f\"} ] , \"type\":\"function_call_output\",\"call_id\":\"c1\"}"},
	{state.KindToolOutput, `{"type":"function_call_output","call_id":"c1","Output":[{"type":"input_text","text":"folded key"}]}`},
	{state.KindUserMessage, `{"type":"message","role":"user","content":[{"type":"input_image","image_url":"u"}]}`},
	{state.KindSystemMessage, `{"type":"message","role":"system","content":[{"type":"input_text","text":"s"}]}`},
	{state.KindToolOutput, `{"type":"function_call_output","call_id":"c1","output":["text"]}`},
	{state.KindHandoffOutput, `{"type":"function_call_output","call_id":"c2","output":[{"type":"input_text","text":"{\"assistant\":\"b\"}"}]}`},
	{state.KindToolOutput, `{"type":"function_call_output","call_id":"c1","output":"x"} trailing`},
	{state.KindToolOutput, `{"type":"function_call_output","call_id":"c1","output":"unterminated}`},
	{state.KindHandoffOutput, `{"type":"function_call_output","call_id":"c2","output":"{\"assistant\":\"b\"}"}`},
	{state.KindToolOutput, `{"type":"function_call_output","call_id":"c1","output":01}`},
	{state.KindToolOutput, `[]`},
	{state.KindToolOutput, ``},
	{0, `{"type":"message"}`},
	// id and status, which ParseItem skips by name (itemLayouts): in
	// order, repeated, out of order, of any type, folded, malformed.
	{state.KindToolCall, `{"type":"function_call","id":"fc_1","call_id":"c1","name":"f","arguments":"{}","status":"completed"}`},
	{state.KindToolCall, `{"id":"fc_1","status":null,"type":"function_call","call_id":"c1","id":"fc_2","name":"f","arguments":"{}","status":"completed"}`},
	{state.KindToolCall, `{"type":"function_call","id":{"x":["\u00e9"]},"call_id":"c1","name":"f","status":[1,2],"arguments":"{}"}`},
	{state.KindToolCall, `{"type":"function_call","ID":"fc_1","call_id":"c1","Status":"x","name":"f","arguments":"{}"}`},
	{state.KindToolCall, `{"type":"function_call","id":"fc_1","call_id":"c1","name":"f","arguments":"{}","status":}`},
	{state.KindToolCall, `{"type":"function_call","id":"fc_1\x","call_id":"c1","name":"f","arguments":"{}"}`},
	{state.KindAssistantMessage, `{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"a","annotations":[]}],"id":"msg_2"}`},
	{state.KindReasoning, `{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"s"}],"status":"completed"}`},
	{state.KindToolOutput, `{"type":"function_call_output","id":"fco_1","call_id":"c1","output":"x","status":"completed"}`},
	{state.KindUserMessage, `{"type":"message","role":"user","id":"m","content":"x","status":"completed"}`},
}

func viewOf(it state.Item) itemView {
	return itemView{it.Seq(), it.Kind().String(), it.CallID(), it.Name(), it.Text(), string(it.Raw()), partsOf(it)}
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func checkParseItem(t fataler, kind state.Kind, raw []byte) {
	t.Helper()
	got, gerr := state.ParseItem(kind, raw)
	want, werr := state.ParseItemReference(kind, raw)
	if errText(gerr) != errText(werr) {
		t.Fatalf("ParseItem(%s, %q) error %v, reference %v", kind, raw, gerr, werr)
	}
	if d := cmp.Diff(viewOf(want), viewOf(got)); d != "" {
		t.Fatalf("ParseItem(%s, %q) (-reference +got):\n%s", kind, raw, d)
	}
}

func TestParseItemMatchesReference(t *testing.T) {
	t.Parallel()
	for _, tt := range trickyRaws {
		checkParseItem(t, tt.kind, []byte(tt.raw))
	}
	for _, text := range trickyTexts {
		for _, it := range trickyItems(text) {
			checkParseItem(t, it.Kind(), it.Raw())
			if _, ok := state.ParseItemFastOnly(it.Kind(), it.Raw()); !ok {
				t.Errorf("the fast path refused the constructors' JSON %s", it.Raw())
			}
		}
	}
}

// trickyItems returns an item of every kind carrying text.
func trickyItems(text string) []state.Item {
	hc, _ := state.ToolCall("fc_h", "call_h"+text, "transfer_to_b", text).WithKind(state.KindHandoffCall)
	ho, _ := state.ToolOutput("call_h"+text, "transfer_to_b", text).WithKind(state.KindHandoffOutput)
	return []state.Item{
		state.UserMessage(text), state.SystemMessage(text), state.AssistantMessage("msg"+text, text),
		state.AssistantMessage("", text), state.Reasoning("rs", text), state.Reasoning("", text),
		state.ToolCall("fc"+text, "call_"+text, "tool"+text, text), state.ToolOutput("call_"+text, "tool"+text, text), hc, ho,
		state.ToolOutputContent("call_"+text, "tool"+text, state.TextPart(text), state.ImageURL("data:"+text, ""),
			state.ImageFile(text, "high"), state.FileID(text), state.FileURL(text), state.FileData(text, text), state.TextPart(text)),
		state.ToolOutputContent("call_"+text, "tool"+text),
	}
}

// trickyRun returns a run whose items, names and strings need every kind
// of escaping, including items parsed from JSON that is not compact. With
// odd, it also holds items parsed from JSON only encoding/json reads.
func trickyRun(t testing.TB, odd bool) *state.Run {
	r := statetest.SampleRun(t, "run_<tricky>")
	r.AddUsage(state.Usage{Requests: 1, InputTokens: 4096, CacheWriteTokens: 4000}) // the member a checkpoint omits at zero
	for i, text := range trickyTexts {
		call := state.ToolCall("fc", fmt.Sprintf("call_%d", i), "tool "+text, text)
		items := []state.Item{state.UserMessage(text), state.Reasoning("rs", text), state.AssistantMessage("", text), call}
		first := r.Reserve(len(items) + 1)
		for j := range items {
			items[j] = items[j].WithSeq(first + int64(j))
		}
		if err := r.Record(items...); err != nil {
			t.Fatal(err)
		}
		out := state.ToolOutput(call.CallID(), call.Name(), text)
		if i%2 == 1 {
			out = state.ToolOutputContent(call.CallID(), call.Name(), state.TextPart(text), state.ImageURL(text, ""), state.FileData(text, text))
		}
		out = out.WithSeq(first + int64(len(items)))
		if err := r.Record(out); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range trickyRaws {
		it, err := state.ParseItem(tt.kind, []byte(tt.raw))
		if _, fast := state.ParseItemFastOnly(tt.kind, []byte(tt.raw)); err != nil || tt.kind.IsCall() || tt.kind.IsOutput() || fast == odd {
			continue
		}
		if err := r.Record(it.WithSeq(r.Reserve(1))); err != nil {
			t.Fatal(err)
		}
	}
	r.SetTraceContext(map[string]string{"b": "<&>", "a": "\u2028"})
	if odd {
		// Extension records under keys that need escaping and sort apart
		// from their escapes, more than a few (Marshal's keys outgrow its
		// array), with values that are not compact or need escaping:
		// Marshal writes them as encoding/json does, and only encoding/json
		// reads them back.
		for k, v := range map[string]string{"z <&>": `{ "a" : "<b>" }`, "a\u2028": "[1,\n 2]", "\xff": `"\u2028&"`,
			"m": `null`, "B": `{"x":{"y":[true,false]}}`, "": `"é"`} {
			r.SetExtension(k, json.RawMessage(v))
		}
	}
	r.Finish("done <here> \xff")
	return r
}

func TestMarshalMatchesReference(t *testing.T) {
	t.Parallel()
	key := []byte("a key")
	runs := map[string]*state.Run{
		"sample": statetest.SampleRun(t, "run_1"),
		"new":    state.NewRun("run_new", ""),
		"tricky": trickyRun(t, false),
		"odd":    trickyRun(t, true),
		"elicit": statetest.ElicitingRun(t, "run_elicit"),
	}
	for name, r := range runs {
		for _, opts := range [][]state.MarshalOption{nil, {state.WithIndent()}, {state.WithSigningKey("k", key)}, {state.WithSigningKey("k", key), state.WithIndent()}} {
			got := mustMarshal(t, r, opts...)
			want, err := state.MarshalReference(r, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: Marshal differs from encoding/json:\n got %s\nwant %s", name, got, want)
			}
			checkUnmarshal(t, got, state.WithVerifyKeys(map[string][]byte{"k": key}))
			if len(opts) == 1 && name != "odd" {
				keys := map[string][]byte(nil)
				if bytes.Contains(got, []byte(`"signature"`)) {
					keys = map[string][]byte{"k": key}
				}
				if state.UnmarshalFastOnly(got, keys) == nil {
					t.Errorf("%s: the fast path refused Marshal's output %s", name, got)
				}
			}
		}
	}
}

func TestMarshalMatchesReferenceProperty(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		r, _ := genRun(t)
		checkCodec(t, r)
	})
}

// checkCodec fails t unless Marshal writes what encoding/json writes for
// r, Unmarshal's fast path reads it, and Unmarshal agrees with its
// reference on it.
func checkCodec(t fataler, r *state.Run) {
	t.Helper()
	got, err := state.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want, err := state.MarshalReference(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Marshal differs from encoding/json:\n got %s\nwant %s", got, want)
	}
	if state.UnmarshalFastOnly(got, nil) == nil {
		t.Fatalf("the fast path refused Marshal's output %s", got)
	}
	checkUnmarshal(t, got)
}

// fataler is what checkUnmarshal needs of a *testing.T or a *rapid.T.
type fataler interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// checkUnmarshal fails t unless Unmarshal and its reference agree on data.
func checkUnmarshal(t fataler, data []byte, opts ...state.UnmarshalOption) {
	t.Helper()
	got, gerr := state.Unmarshal(data, opts...)
	want, werr := state.UnmarshalReference(data, opts...)
	if errText(gerr) != errText(werr) {
		t.Fatalf("Unmarshal(%q) error %v, reference %v", data, gerr, werr)
	}
	if gerr != nil {
		if got != nil {
			t.Fatal("a run returned with an error")
		}
		return
	}
	if d := cmp.Diff(snap(want), snap(got)); d != "" {
		t.Fatalf("Unmarshal(%q) (-reference +got):\n%s", data, d)
	}
	wb, err := state.MarshalReference(want)
	if err != nil {
		t.Fatal(err)
	}
	gb, err := state.MarshalReference(got)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(wb, gb) {
		t.Fatalf("Unmarshal(%q) decodes to\n%s\nthe reference to\n%s", data, gb, wb)
	}
	// Marshal's fast path copies the items it decoded as canonical.
	if fb, err := state.Marshal(got); err != nil || !bytes.Equal(fb, wb) {
		t.Fatalf("Marshal of Unmarshal(%q) = %s, %v; encoding/json writes\n%s", data, fb, err, wb)
	}
}

// FuzzUnmarshalMatchesReference checks that Unmarshal's fast path never
// accepts what encoding/json would refuse or read differently, and that
// every error is the reference's.
func FuzzUnmarshalMatchesReference(f *testing.F) {
	good, _ := filepath.Glob("testdata/*.json")
	bad, _ := filepath.Glob("testdata/bad/*.json")
	for _, name := range append(good, bad...) {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data) // the checkpoints in testdata, good and bad
	}
	for _, odd := range []bool{false, true} {
		tricky := trickyRun(f, odd)
		for _, opts := range [][]state.MarshalOption{nil, {state.WithIndent()}, {state.WithSigningKey("golden", goldenKey)}} {
			f.Add(mustMarshal(f, tricky, opts...))
		}
	}
	small := state.NewRun("r", "a")
	small.SetMaxTurns(1)
	small.AddInput(state.UserMessage("hi"))
	f.Add(mustMarshal(f, small))
	f.Add(mustMarshal(f, typedRun(f)))
	f.Add(mustMarshal(f, typedRun(f), state.WithIndent()))
	keys := state.WithVerifyKeys(map[string][]byte{"golden": goldenKey})
	f.Fuzz(func(t *testing.T, data []byte) {
		checkUnmarshal(t, data)
		checkUnmarshal(t, data, keys)
	})
}

// FuzzParseItemMatchesReference checks ParseItem's fast path against
// encoding/json on any kind and JSON.
func FuzzParseItemMatchesReference(f *testing.F) {
	for _, tt := range trickyRaws {
		f.Add(uint8(tt.kind), []byte(tt.raw))
	}
	for _, text := range trickyTexts {
		for _, it := range trickyItems(text) {
			f.Add(uint8(it.Kind()), []byte(it.Raw()))
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, raw []byte) {
		checkParseItem(t, state.Kind(kind%16), raw)
	})
}

func TestUnmarshalMatchesReferenceOnEdits(t *testing.T) {
	t.Parallel()
	good := mustMarshal(t, statetest.SampleRun(t, "run_1"))
	for _, edit := range []struct{ old, new string }{
		{`"turn":2`, `"turn":2.0`},
		{`"turn":2`, `"turn":null`},
		{`"turn":2`, `"Turn":2`},
		{`"turn":2`, `"turn":2,"turn":3`},
		{`"turn":2`, `"turn":99999999999999999999`},
		{`"agent":"assistant"`, `"agent":"\u0061ssistant"`},
		{`"agent":"assistant"`, `"agent":null`},
		{`"id":"run_1"`, `"id":null`},
		{`"next_seq":`, `"next_seq":null,"x":`},
		{`"finished":false`, `"finished":null`},
		{`"finished":false`, `"finished":0`},
		{`"pending":[`, `"pending":null,"p":[`},
		{`"pending":[{`, `"pending":[null,{`},
		{`"pending":[`, `"pending":[{"owner":"o/c","output_seq":4,"seq":3,"agent":"a","arguments":"{\"q\":1}","call_id":"c","tool":"x"},`},
		{`"pending":[{`, `"pending":[{"tool":null,"seq":null,"owner":null},{`},
		{`"pending":[{`, `"pending":[{"Tool":"x"},{`},
		{`"pending":[{`, `"pending":[{"tool":"x","tool":"y"},{`},
		{`"pending":[{`, `"pending":[{"seq":1.5},{`},
		{`"pending":[{`, `"pending":[{"seq":"1"},{`},
		{`"pending":[{`, `"pending":[{"x":1},{`},
		{`"pending":[{`, `"pending":[[],{`},
		{`"pending":[`, `"pending":{},"p":[`},
		{`"decisions":[`, `"decisions":[{"tool":"x","verdict":"approved","always":true},`},
		{`"trace":{`, `"trace":[],"t":{`},
		{`"usage":{`, `"usage":{"requests":1,`},
		{`"response":{`, `"response":{"start":null,`},
		{`"kind":"reasoning"`, `"kind":"REASONING"`},
		{`"kind":"reasoning"`, `"kind":"reasoning","kind":"reasoning"`},
		{`{"seq":2,`, `{"seq":2,"name":"x",`},
		{`"schema":"turnkit.run"`, `"schema":"turnkit\u002erun"`},
		{`"version":1`, `"version":1.0`},
		{`"version":1`, `"version":1,"version":1`},
		{`{"schema"`, ` {"schema"`},
		{`"raw":{"type":"reasoning"`, `"raw":{"type":"reasoning","summary":null,"x":1`},
	} {
		data := bytes.Replace(good, []byte(edit.old), []byte(edit.new), 1)
		if bytes.Equal(data, good) {
			t.Fatalf("edit %q does not apply", edit.old)
		}
		checkUnmarshal(t, data)
	}
	// The wire item's fields in another order, and whitespace everywhere.
	var doc map[string]any
	if err := json.Unmarshal(good, &doc); err != nil {
		t.Fatal(err)
	}
	indented, err := json.MarshalIndent(doc, "\t", " ")
	if err != nil {
		t.Fatal(err)
	}
	checkUnmarshal(t, indented)
	run := doc["run"].(map[string]any)
	for _, list := range []string{"input", "items", "context"} {
		var out []json.RawMessage
		for _, w := range run[list].([]any) {
			w := w.(map[string]any)
			raw, _ := json.Marshal(w["raw"])
			out = append(out, json.RawMessage(fmt.Sprintf(`{"raw":%s,"seq":%v,"kind":%q}`, raw, w["seq"], w["kind"])))
		}
		run[list] = out
	}
	reordered, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	checkUnmarshal(t, reordered)
	for _, data := range [][]byte{indented, reordered} {
		if state.UnmarshalFastOnly(data, nil) == nil {
			t.Errorf("the fast path refused %s", data)
		}
	}
}

// TestRoundTripArbitraryStringsProperty: items, names and IDs of any bytes
// encode as encoding/json encodes them, and decode, through the fast path,
// as encoding/json decodes them.
func TestRoundTripArbitraryStringsProperty(t *testing.T) {
	t.Parallel()
	anyString := rapid.OneOf(rapid.String(), rapid.StringOf(rapid.RuneFrom([]rune{'"', '\\', '<', '>', '&', '\n', 0, 0x7f, 0x2028, 'é', 0xfffd, 0x1f600})),
		rapid.Map(rapid.SliceOf(rapid.Byte()), func(b []byte) string { return string(b) }))
	nonEmpty := rapid.Map(anyString, func(s string) string { return "x" + s })
	rapid.Check(t, func(t *rapid.T) {
		r := state.NewRun(nonEmpty.Draw(t, "id"), anyString.Draw(t, "agent")) // a checkpoint has a run ID
		r.SetMaxTurns(3)
		r.AddInput(state.UserMessage(anyString.Draw(t, "input")))
		for i := range rapid.IntRange(0, 6).Draw(t, "n") {
			var items []state.Item
			switch rapid.IntRange(0, 3).Draw(t, "kind") {
			case 0:
				items = append(items, state.AssistantMessage(anyString.Draw(t, "msgID"), anyString.Draw(t, "text")))
			case 1:
				items = append(items, state.Reasoning(anyString.Draw(t, "rsID"), anyString.Draw(t, "summary")))
			case 2:
				items = append(items, state.SystemMessage(anyString.Draw(t, "system")))
			default:
				callID, name := nonEmpty.Draw(t, "callID")+fmt.Sprint(i), nonEmpty.Draw(t, "name")
				items = append(items, state.ToolCall(anyString.Draw(t, "fcID"), callID, name, anyString.Draw(t, "args")),
					state.ToolOutput(callID, name, anyString.Draw(t, "output")))
			}
			first := r.Reserve(len(items))
			for j := range items {
				items[j] = items[j].WithSeq(first + int64(j))
			}
			if err := r.Record(items...); err != nil {
				t.Fatal(err)
			}
		}
		r.SetSessionID(anyString.Draw(t, "session"))
		r.Finish(anyString.Draw(t, "final"))
		checkCodec(t, r)
		for _, it := range r.Items().All() {
			raw := it.Raw()
			if _, ok := state.ParseItemFastOnly(it.Kind(), raw); !ok {
				t.Fatalf("the fast path refused the constructors' JSON %s", raw)
			}
			checkParseItem(t, it.Kind(), raw)
		}
	})
}

// TestUnmarshalSharedChunks: the items of a decoded checkpoint share the
// chunks their raw JSON and strings are copied into; a checkpoint of many
// items, some larger than a chunk, spans many of them, and every item
// still reads back as it was, before and after a second decoding of the
// same bytes.
func TestUnmarshalSharedChunks(t *testing.T) {
	run := state.NewRun("chunks", "a")
	var history []state.Item
	for i := range 3000 {
		text := fmt.Sprintf("message %d %s", i, trickyTexts[i%len(trickyTexts)])
		if i%500 == 0 {
			text += string(bytes.Repeat([]byte("x"), 10<<10)) // longer than a chunk
		}
		id := fmt.Sprintf("call_%d", i)
		history = append(history,
			state.UserMessage(text).WithSeq(int64(3*i+1)),
			state.ToolCall("fc_"+id, id, "lookup", `{"q":"`+fmt.Sprint(i)+`"}`).WithSeq(int64(3*i+2)),
			state.ToolOutput(id, "lookup", text).WithSeq(int64(3*i+3)))
	}
	if err := run.SetHistory(history); err != nil {
		t.Fatal(err)
	}
	data, err := state.Marshal(run)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := state.UnmarshalReference(data)
	if err != nil {
		t.Fatal(err)
	}
	want := ref.History()
	if len(want) != len(history) {
		t.Fatalf("the reference decoded %d items, want %d", len(want), len(history))
	}
	got := state.UnmarshalFastOnly(data, nil)
	again := state.UnmarshalFastOnly(data, nil)
	if got == nil || again == nil {
		t.Fatal("the fast path gave up")
	}
	for _, r := range []*state.Run{got, again} {
		items := r.History()
		if len(items) != len(want) {
			t.Fatalf("decoded %d items, want %d", len(items), len(want))
		}
		for i, it := range items {
			if !it.Equal(want[i]) || it.Text() != want[i].Text() || it.CallID() != want[i].CallID() || it.Name() != want[i].Name() {
				t.Fatalf("item %d decoded as %v (text %.40q), want %v (text %.40q)", i, it, it.Text(), want[i], want[i].Text())
			}
		}
	}
}

// TestUnmarshalFastPending: the fast path reads pending approvals itself
// (it does not give up on them) and reads them as the reference does.
func TestUnmarshalFastPending(t *testing.T) {
	good := mustMarshal(t, statetest.SampleRun(t, "run_1"))
	data := bytes.Replace(good, []byte(`"pending":[`),
		[]byte(`"pending":[{"owner":"o/c","output_seq":4,"seq":3,"agent":"a","arguments":"{\"q\":1}","call_id":"c","tool":"x"},`), 1)
	ref, err := state.UnmarshalReference(data)
	if err != nil {
		t.Fatal(err)
	}
	got := state.UnmarshalFastOnly(data, nil)
	if got == nil {
		t.Fatal("the fast path gave up on pending approvals")
	}
	if d := cmp.Diff(ref.Pending(), got.Pending()); d != "" || len(got.Pending()) < 2 {
		t.Fatalf("pending approvals (-reference +fast), %d of them:\n%s", len(got.Pending()), d)
	}
}

// TestUnmarshalPooledDecoders: Unmarshal's decoders (their scratch, the
// run object and the shared chunks' arena) are reused between calls, and
// a run decoded before keeps what it read, however many checkpoints are
// decoded after it; a checkpoint naming more tools than a decoder looks up
// in its list reads its names back as the reference does.
func TestUnmarshalPooledDecoders(t *testing.T) {
	many := state.NewRun("names", "a")
	var history []state.Item
	for i := range 40 {
		id, tool := fmt.Sprintf("call_%d", i), fmt.Sprintf("tool_%d", i%20)
		history = append(history,
			state.ToolCall("fc_"+id, id, tool, `{"i":`+fmt.Sprint(i)+`}`).WithSeq(int64(2*i+1)),
			state.ToolOutput(id, tool, "ok "+id).WithSeq(int64(2*i+2)))
	}
	if err := many.SetHistory(history); err != nil {
		t.Fatal(err)
	}
	first, second := mustMarshal(t, many), mustMarshal(t, trickyRun(t, false))
	got, err := state.Unmarshal(first)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if _, err := state.Unmarshal(second); err != nil {
			t.Fatal(err)
		}
	}
	if again := mustMarshal(t, got); !bytes.Equal(again, first) {
		t.Fatalf("a run decoded before others marshals as\n%s\nwant\n%s", again, first)
	}
	for i, it := range got.History() {
		if want := history[i]; it.Name() != want.Name() || it.CallID() != want.CallID() || it.Text() != want.Text() {
			t.Fatalf("item %d reads back as %q %q %q, want %q %q %q", i, it.Name(), it.CallID(), it.Text(), want.Name(), want.CallID(), want.Text())
		}
	}
	checkUnmarshal(t, first)
}

// FuzzMarshalApprovalsMatchesReference checks Marshal's hand-written
// pending approvals and decisions against encoding/json: the same bytes,
// and a failure where encoding/json fails (an invalid verdict). Its seeds
// run in every go test: the tricky texts in every string member, the
// omitted members empty and set, an elicitation and an answer (which go
// through encoding/json), and the verdicts valid and not.
func FuzzMarshalApprovalsMatchesReference(f *testing.F) {
	for i, text := range trickyTexts {
		other := trickyTexts[(i+1)%len(trickyTexts)]
		f.Add(text, other, text, other, text, int64(i), int64(-i), uint8(i%4), i%2 == 0, other, "", "")
	}
	f.Add("t", "c", "{}", "a", "", int64(1), int64(2), uint8(1), false, "", "req", "srv")
	f.Add("t", "", "", "", "o/c", int64(0), int64(0), uint8(2), true, "no", "", "")
	f.Fuzz(func(t *testing.T, tool, callID, args, agent, owner string, seq, outSeq int64, verdict uint8, always bool, message, request, server string) {
		pending := []state.Approval{
			{Tool: tool, CallID: callID, Arguments: args, Agent: agent, Seq: seq, OutputSeq: outSeq, Owner: owner},
			{Tool: agent, CallID: args, Seq: outSeq, Elicitation: state.Elicitation{Server: server, Message: message}},
		}
		decisions := []state.Decision{
			{Tool: tool, CallID: callID, Fingerprint: args, Verdict: state.Verdict(verdict), Always: always, Message: message, Owner: owner},
			{Tool: agent, Verdict: state.Approved, Answer: state.ElicitationAnswer{Request: request, Action: state.Accept}},
		}
		for _, n := range []int{0, 1, 2} {
			checkListWriter(t, "pending approvals", state.AppendApprovalsFast, pending[:n])
			checkListWriter(t, "decisions", state.AppendDecisionsFast, decisions[:n])
		}
		checkListWriter(t, "pending approvals", state.AppendApprovalsFast, []state.Approval(nil))
		checkListWriter(t, "decisions", state.AppendDecisionsFast, []state.Decision(nil))
	})
}

// checkListWriter compares a hand-written list writer with encoding/json on l.
func checkListWriter[T any](t *testing.T, what string, write func([]T) ([]byte, bool), l []T) {
	t.Helper()
	want, err := json.Marshal(l)
	got, ok := write(l)
	if ok != (err == nil) {
		t.Fatalf("%s %+v: written: %v, encoding/json's error: %v", what, l, ok, err)
	}
	if ok && !bytes.Equal(got, want) {
		t.Fatalf("%s %+v written as\n%s\nencoding/json writes\n%s", what, l, got, want)
	}
}

// TestMarshalFastTakesEveryMember: Marshal's fast path writes runs that
// hold every member of the run object (trace, extension records,
// guardrail results, model calls) itself, rather than giving up to
// encoding/json, and the same bytes.
func TestMarshalFastTakesEveryMember(t *testing.T) {
	t.Parallel()
	for name, r := range map[string]*state.Run{
		"sample": statetest.SampleRun(t, "run_1"),
		"new":    state.NewRun("run_new", ""),
		"tricky": trickyRun(t, false),
		"odd":    trickyRun(t, true), // extension records
	} {
		got, ok := state.MarshalFastOnly(r)
		if !ok {
			t.Errorf("%s: the fast path gave up", name)
			continue
		}
		want, err := state.MarshalReference(r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the fast path differs from encoding/json:\n got %s\nwant %s", name, got, want)
		}
	}
}

// TestMarshalRunObjectOnStack: Marshal of a run with an input and its
// items allocates its buffer only: nothing for the run object it writes
// from, nor for a copy of the items (it writes them from the run's own
// lists). Checked to fail (one allocation more) with the run object
// reflected on, which moved it to the heap, and with the items' wire
// forms copied into a list of their own.
func TestMarshalRunObjectOnStack(t *testing.T) { // not parallel: AllocsPerRun
	r := state.NewRun("run_1", "a")
	r.AddInput(state.UserMessage("hi"))
	if n := testing.AllocsPerRun(20, func() {
		if _, err := state.Marshal(r); err != nil {
			t.Fatal(err)
		}
	}); n != 1 {
		t.Errorf("Marshal: %v allocations, want 1 (the buffer)", n)
	}
}

// TestMembersListed: the fast paths' members lists name every field of
// the run object, a usage and a boundary, in order.
func TestMembersListed(t *testing.T) {
	t.Parallel()
	if err := state.CheckAllMembers(); err != nil {
		t.Fatal(err)
	}
}

// TestMembersListsChecked: the check of a members list refuses a list
// that leaves a field out or lists one out of order.
func TestMembersListsChecked(t *testing.T) {
	t.Parallel()
	type pair struct {
		A int64 `json:"a"`
		B int64 `json:"b"`
	}
	if err := state.CheckMembersOf(func(p *pair) []any { return []any{&p.A, &p.B} }); err != nil {
		t.Errorf("the whole list in order: %v", err)
	}
	for name, members := range map[string]func(*pair) []any{
		"a field left out": func(p *pair) []any { return []any{&p.A} },
		"out of order":     func(p *pair) []any { return []any{&p.B, &p.A} },
	} {
		if err := state.CheckMembersOf(members); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestUnmarshalFastModelCallsPastTurn: the fast path makes a run's list of
// model calls with room for one a turn; a run that made more (a retried
// call, a handoff) grows it, and decodes as the reference does.
func TestUnmarshalFastModelCallsPastTurn(t *testing.T) {
	t.Parallel()
	r := state.NewRun("run_1", "a")
	r.SetTurn(1)
	for i := range 3 {
		r.AddModelCall(state.ModelCall{Turn: 1, Agent: "a", ResponseID: fmt.Sprint("resp_", i)})
	}
	data := mustMarshal(t, r)
	got := state.UnmarshalFastOnly(data, nil)
	if got == nil {
		t.Fatalf("the fast path refused %s", data)
	}
	if diff := cmp.Diff(r.ModelCalls(), got.ModelCalls()); diff != "" {
		t.Errorf("model calls (-want +got):\n%s", diff)
	}
	checkUnmarshal(t, data)
}

// TestUnmarshalInputSharesItems: a run's items that begin with its input
// are read as the reference reads them, the input's items taken as they
// are (not parsed again) and sharing its list; an item list that begins
// otherwise leaves the input as it was read, whichever item differs.
func TestUnmarshalInputSharesItems(t *testing.T) {
	run := state.NewRun("shares", "a")
	run.AddInput(state.UserMessage("first"), state.UserMessage("second"))
	if err := run.Record(state.ToolCall("fc_1", "call_1", "lookup", `{}`).WithSeq(run.Reserve(1))); err != nil {
		t.Fatal(err)
	}
	data := mustMarshal(t, run)
	first := []byte(`{"seq":1,"kind":"user_message","raw":{"type":"message","role":"user","content":"first"}}`)
	if !bytes.Contains(data, append([]byte(`"input":[`), first...)) {
		t.Fatalf("the checkpoint does not begin its input with %s:\n%s", first, data)
	}
	tests := []struct {
		name      string
		data      []byte
		wantInput []string
	}{
		{name: "the items begin with the input", data: data, wantInput: []string{"first", "second"}},
		{name: "the input's first item is not the items' first", wantInput: []string{"second"},
			data: bytes.Replace(data, append(first, ','), nil, 1)}, // from the input only: it comes first
		{name: "indented", data: mustMarshal(t, run, state.WithIndent()), wantInput: []string{"first", "second"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkUnmarshal(t, tt.data)
			got := state.UnmarshalFastOnly(tt.data, nil)
			if got == nil {
				t.Fatal("the fast path gave up")
			}
			var texts []string
			for _, it := range got.Input() {
				texts = append(texts, it.Text())
			}
			if d := cmp.Diff(tt.wantInput, texts); d != "" {
				t.Errorf("input (-want +got):\n%s", d)
			}
			if items := got.Items().Slice(); len(items) != 3 || items[0].Text() != "first" || items[2].CallID() != "call_1" {
				t.Errorf("items = %v, want the two messages and the call", items)
			}
		})
	}
}

// TestMarshalCopiesOnlyCanonicalRaw: Marshal copies an item's JSON
// without scanning it only when the item knows it is as encoding/json
// writes it; an item read from JSON with whitespace or with characters
// that encoding/json escapes (by ParseItem, or by Unmarshal from a
// checkpoint that another writer laid out) is still written compacted
// and escaped. Checked to fail with every item taken as canonical.
func TestMarshalCopiesOnlyCanonicalRaw(t *testing.T) {
	t.Parallel()
	r := state.NewRun("run_canon", "a")
	r.AddInput(state.UserMessage("a < b & c \u2028"))
	for _, raw := range []string{
		`{"type":"message","role":"user","content":"a < b"}`,
		`{"type":"message", "role":"user","content":"spaced"}`,
		`{"type":"message","role":"user","content":"line \u2029 sep"}`,
	} {
		it, err := state.ParseItem(state.KindUserMessage, []byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		r.AddInput(it)
	}
	got := mustMarshal(t, r)
	want, err := state.MarshalReference(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Marshal of parsed items differs from encoding/json:\n got %s\nwant %s", got, want)
	}
	// Another writer's checkpoint: the same run with its items' HTML
	// characters and separators unescaped, and a space in one item.
	other := strings.NewReplacer(`\u003c`, "<", `\u0026`, "&", `\u2028`, "\u2028", `"role":"user","content":"spaced"`, `"role": "user","content":"spaced"`).Replace(string(got))
	if other == string(got) {
		t.Fatal("the checkpoint has nothing to unescape")
	}
	loaded := mustUnmarshal(t, []byte(other))
	if again := mustMarshal(t, loaded); !bytes.Equal(again, want) {
		t.Errorf("Marshal of a run decoded from unescaped JSON differs from encoding/json:\n got %s\nwant %s", again, want)
	}
}

// TestUnmarshalInputAgainInItems: a run's items begin with its input, and
// Unmarshal takes an item whose JSON begins with the input's item's JSON
// there without scanning it again; edits around that JSON (after it,
// before its kind, of its position or kind, inside it) decode as
// encoding/json decodes them, or fail as it fails.
func TestUnmarshalInputAgainInItems(t *testing.T) {
	t.Parallel()
	r := state.NewRun("run_again", "a")
	r.AddInput(state.UserMessage("a < b"))
	marshalled := string(mustMarshal(t, r))
	// As Marshal writes it, and as another writer may: unescaped.
	for _, esc := range []string{`\u003c`, "<"} {
		good := strings.ReplaceAll(marshalled, `\u003c`, esc)
		raw := `{"type":"message","role":"user","content":"a ` + esc + ` b"}`
		item := `{"seq":1,"kind":"user_message","raw":` + raw + `}`
		if strings.Count(good, item) != 2 {
			t.Fatalf("the checkpoint does not hold the input's item twice: %s", good)
		}
		i := strings.LastIndex(good, item) // the items' copy
		for _, edited := range []string{
			item,
			`{"seq":1,"kind":"user_message","raw":` + raw + `x}`,
			`{"seq":1,"kind":"user_message","raw":` + raw + `,"raw":` + raw + `}`,
			`{"raw":` + raw + `,"seq":1,"kind":"user_message"}`,
			`{"seq":1,"raw":` + raw + `,"kind":"system_message"}`,
			`{"seq":1,"kind":"assistant_message","raw":` + raw + `}`,
			`{"seq":2,"kind":"user_message","raw":` + raw + `}`,
			`{"seq":1,"kind":"user_message","raw":` + raw[:len(raw)-1] + `,"x":1}}`,
			`{"seq":1,"kind":"user_message","raw":` + raw[:len(raw)-1] + `}}`,
			`{"seq":1,"kind":"user_message","raw":` + raw + ` }`,
			`{"seq":1,"kind":"user_message","name":"n","raw":` + raw + `}`,
		} {
			checkUnmarshal(t, []byte(good[:i]+edited+good[i+len(item):]))
		}
		// The input at position 2, and its JSON at position 1 as well:
		// the items' first item begins like the input's but is not it.
		at2 := strings.Replace(item, `"seq":1`, `"seq":2`, 1)
		moved := strings.Replace(good[:i], item, at2, 1) + item + "," + at2 + good[i+len(item):]
		moved = strings.Replace(moved, `"next_seq":2`, `"next_seq":3`, 1)
		if _, err := state.Unmarshal([]byte(moved)); err != nil {
			t.Fatalf("the input at position 2: %v", err)
		}
		checkUnmarshal(t, []byte(moved))
	}
}

// TestOwnRecordMatchesReference checks the record turnkit adds to a
// head's extension records outside the run's map (a delta's record, a
// whole checkpoint's history note) against encoding/json writing the map
// with the record in it: alone, among the run's records, which sort on
// both sides of it, and over a record of the run under the same key,
// which it replaces.
func TestOwnRecordMatchesReference(t *testing.T) {
	t.Parallel()
	exts := map[string]map[string]string{
		"none":   nil,
		"around": {"a": `{"k":1}`, "turnkit.checkpoint": `{"commit":null}`, "turnkit.z": `[1, 2]`, "z <&>": `"<b>"`},
		"same key": {"turnkit.delta": `{"full":99}`, "turnkit.history": `{"session":"forged"}`,
			"m": `null`},
	}
	for name, ext := range exts {
		t.Run(name, func(t *testing.T) {
			r, _ := sessionRun(t, 3)
			for k, v := range ext {
				r.SetExtension(k, json.RawMessage(v))
			}
			got, err := r.Delta()
			if err != nil {
				t.Fatal(err)
			}
			want, err := state.DeltaReference(r)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Head, want.Head) {
				t.Errorf("delta head:\n%s\nwant (encoding/json):\n%s", got.Head, want.Head)
			}
			if !bytes.Contains(got.Head, []byte(`"turnkit.delta":{"full":`)) {
				t.Errorf("delta head without its record: %s", got.Head)
			}
			whole, err := state.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := state.MarshalReference(r)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(whole, ref) {
				t.Errorf("checkpoint:\n%s\nwant (encoding/json):\n%s", whole, ref)
			}
			if bytes.Contains(whole, []byte("forged")) || !bytes.Contains(whole, []byte(`"turnkit.history":{`)) {
				t.Errorf("checkpoint's history note is not the run's own: %s", whole)
			}
		})
	}
}
