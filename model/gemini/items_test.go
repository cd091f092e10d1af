package gemini_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/model/gemini"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// okReply is a plain answer for tests that look at the request only.
var okReply = reply{file: "text.json"}

// contentsOf makes one call with the input and returns the request's
// contents.
func contentsOf(t *testing.T, input ...state.Item) any {
	t.Helper()
	srv := newServer(t, okReply)
	if _, err := call(t, gemini.New(srv.client()), false, input...); err != nil {
		t.Fatalf("Respond: %v", err)
	}
	return srv.got()[0].Body["contents"]
}

// A run's items, sent back in a later call, give the parts the model sent:
// the thought, the signatures on the parts they came on, the calls and
// their responses, and the final text with its signature.
func TestHistorySentBack(t *testing.T) {
	first := runBoth(t, false, weatherAgent(gemini.New(newServer(t, reply{file: "call.json"}, reply{file: "text.json"}).client())), "What is the weather in Paris and Tokyo?")
	input := append(first.items, state.UserMessage("And tomorrow?"))
	want := jsonOf(t, `[
		{"role":"user","parts":[{"text":"What is the weather in Paris and Tokyo?"}]},
		{"role":"model","parts":[
			{"text":"The user wants the weather in two cities; I will call the tool twice.","thought":true},
			{"functionCall":{"name":"get_weather","args":{"location":"Paris"}},"thoughtSignature":"c2lnbmF0dXJlLW9mLXRoZS1jYWxscw=="},
			{"functionCall":{"name":"get_weather","args":{"location":"Tokyo"}}}
		]},
		{"role":"user","parts":[
			{"functionResponse":{"name":"get_weather","response":{"output":"sunny in Paris"}}},
			{"functionResponse":{"name":"get_weather","response":{"output":"sunny in Tokyo"}}}
		]},
		{"role":"model","parts":[{"text":"It is sunny in Paris and in Tokyo.","thoughtSignature":"c2lnbmF0dXJlLW9mLXRoZS10ZXh0"}]},
		{"role":"user","parts":[{"text":"And tomorrow?"}]}
	]`)
	if diff := cmp.Diff(want, contentsOf(t, input...)); diff != "" {
		t.Errorf("contents (-want +got):\n%s", diff)
	}
	// The items survive a checkpoint: parsed back from their JSON, they
	// send the same request.
	parsed := make([]state.Item, len(input))
	for i, it := range input {
		p, err := state.ParseItem(it.Kind(), it.Raw())
		if err != nil {
			t.Fatalf("ParseItem(%s): %v", it, err)
		}
		parsed[i] = p
	}
	if diff := cmp.Diff(want, contentsOf(t, parsed...)); diff != "" {
		t.Errorf("contents from parsed items (-want +got):\n%s", diff)
	}
}

// A call the API gave an ID keeps it as its call ID, and the ID goes back
// on the call and on its response.
func TestCallIDsFromTheAPI(t *testing.T) {
	srv := newServer(t, reply{file: "call_ids.json"}, okReply)
	out := runBoth(t, false, weatherAgent(gemini.New(srv.client())), "Weather in Oslo?")
	if got := out.items[2].CallID(); got != "fc-8f2a61" {
		t.Errorf("call ID = %q, want the API's fc-8f2a61 (items %v)", got, out.items)
	}
	want := jsonOf(t, `[
		{"role":"user","parts":[{"text":"Weather in Oslo?"}]},
		{"role":"model","parts":[{"functionCall":{"id":"fc-8f2a61","name":"get_weather","args":{"location":"Oslo"}},"thoughtSignature":"b3Nsby1zaWc="}]},
		{"role":"user","parts":[{"functionResponse":{"id":"fc-8f2a61","name":"get_weather","response":{"output":"sunny in Oslo"}}}]}
	]`)
	if diff := cmp.Diff(want, srv.got()[1].Body["contents"]); diff != "" {
		t.Errorf("contents (-want +got):\n%s", diff)
	}
}

const (
	pngDataURL = "data:image/png;base64,iVBORw0KGgo="
	pdfDataURL = "data:application/pdf;base64,JVBERi0xLjQ="
)

// Images and files in a user message become inline data or file data, and
// in a tool output they become the function response's parts.
func TestImagesAndFiles(t *testing.T) {
	input := []state.Item{
		state.UserContent(
			state.TextPart("What is in these?"),
			state.ImageURL(pngDataURL, "high"),
			state.ImageURL("https://example.com/cat.jpg", ""),
			state.FileURL("https://generativelanguage.googleapis.com/v1beta/files/abc123"),
			state.FileData("report.pdf", pdfDataURL),
		),
		state.ToolCall("", "call_1", "screenshot", `{}`),
		state.ToolOutputContent("call_1", "screenshot", state.TextPart("the screen:"), state.ImageURL(pngDataURL, "")),
	}
	want := jsonOf(t, `[
		{"role":"user","parts":[
			{"text":"What is in these?"},
			{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}},
			{"fileData":{"fileUri":"https://example.com/cat.jpg","mimeType":"image/jpeg"}},
			{"fileData":{"fileUri":"https://generativelanguage.googleapis.com/v1beta/files/abc123"}},
			{"inlineData":{"mimeType":"application/pdf","data":"JVBERi0xLjQ=","displayName":"report.pdf"}}
		]},
		{"role":"model","parts":[{"functionCall":{"id":"call_1","name":"screenshot"}}]},
		{"role":"user","parts":[{"functionResponse":{"id":"call_1","name":"screenshot","response":{"output":"the screen:"},
			"parts":[{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}}]}}]}
	]`)
	if diff := cmp.Diff(want, contentsOf(t, input...)); diff != "" {
		t.Errorf("contents (-want +got):\n%s", diff)
	}
}

// What the Gemini API cannot take fails the call before any request, with
// an *InputError naming the item (and the part).
func TestInputRefused(t *testing.T) {
	hosted, err := state.HostedCall([]byte(`{"type":"web_search_call","id":"ws_1","status":"completed"}`))
	if err != nil {
		t.Fatal(err)
	}
	opaque, err := state.Opaque([]byte(`{"type":"compaction","id":"cmp_1","encrypted_content":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		give      []state.Item
		wantIndex int
		wantPart  int
		wantKind  state.Kind
	}{
		{name: "image by file ID", give: []state.Item{state.UserContent(state.TextPart("see"), state.ImageFile("file-abc", ""))},
			wantIndex: 0, wantPart: 1, wantKind: state.KindUserMessage},
		{name: "file by file ID", give: []state.Item{state.UserMessage("hi"), state.UserContent(state.FileID("file-abc"))},
			wantIndex: 1, wantPart: 0, wantKind: state.KindUserMessage},
		{name: "bad data URL", give: []state.Item{state.UserContent(state.ImageURL("data:image/png,rawbytes", ""))},
			wantIndex: 0, wantPart: 0, wantKind: state.KindUserMessage},
		{name: "image by file ID in a tool output", give: []state.Item{state.ToolCall("", "c1", "f", `{}`), state.ToolOutputContent("c1", "f", state.ImageFile("file-abc", ""))},
			wantIndex: 1, wantPart: 0, wantKind: state.KindToolOutput},
		{name: "hosted call", give: []state.Item{state.UserMessage("hi"), hosted},
			wantIndex: 1, wantPart: -1, wantKind: state.KindHostedCall},
		{name: "another API's opaque item", give: []state.Item{opaque},
			wantIndex: 0, wantPart: -1, wantKind: state.KindOpaque},
		{name: "custom tool call", give: []state.Item{state.CustomCall("", "c1", "grep", "foo")},
			wantIndex: 0, wantPart: -1, wantKind: state.KindCustomCall},
		{name: "MCP approval", give: []state.Item{state.MCPApprovalResponse("mcpr_1", "mcp:s/t", true, "")},
			wantIndex: 0, wantPart: -1, wantKind: state.KindMCPApprovalResponse},
		{name: "arguments not an object", give: []state.Item{state.ToolCall("", "c1", "f", `[1,2]`)},
			wantIndex: 0, wantPart: -1, wantKind: state.KindToolCall},
		{name: "output of no known function", give: []state.Item{state.ToolOutput("c9", "", "done")},
			wantIndex: 0, wantPart: -1, wantKind: state.KindToolOutput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, okReply)
			_, err := call(t, gemini.New(srv.client()), false, tt.give...)
			ie, ok := errors.AsType[*gemini.InputError](err)
			if !ok {
				t.Fatalf("error %v, want a *gemini.InputError", err)
			}
			if ie.Index != tt.wantIndex || ie.Part != tt.wantPart || ie.Kind != tt.wantKind {
				t.Errorf("InputError{Index: %d, Part: %d, Kind: %s}, want {%d, %d, %s}: %v", ie.Index, ie.Part, ie.Kind, tt.wantIndex, tt.wantPart, tt.wantKind, ie)
			}
			if !errors.Is(err, gemini.ErrUnsupportedItem) || !errors.Is(err, pipeline.ErrModel) {
				t.Errorf("error %v: want ErrUnsupportedItem inside a pipeline.ModelError", err)
			}
			if n := len(srv.got()); n != 0 {
				t.Errorf("%d requests sent, want none", n)
			}
		})
	}
}

// Another API's reasoning, and the opaque items another adapter made for
// its provider only, stay out of the request (the documented rule);
// system items join the system instruction; assistant messages of any API
// are model text.
func TestForeignItems(t *testing.T) {
	thinking, err := state.ParseItem(state.KindReasoning, []byte(`{"type":"reasoning","summary":[{"type":"summary_text","text":"hm"}],"anthropic":{"type":"thinking","thinking":"hm","signature":"EqQB"}}`))
	if err != nil {
		t.Fatal(err)
	}
	serverTool, err := state.Opaque([]byte(`{"type":"anthropic.server_tool_use","anthropic":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"x"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, okReply)
	m := gemini.New(srv.client())
	c := &pipeline.ModelCall{
		Instructions: "Be brief.",
		Input: state.ItemsOf([]state.Item{
			state.UserMessage("hi"),
			state.Reasoning("rs_1", "the user greets me"),
			thinking,
			serverTool,
			state.AssistantMessage("msg_1", "Hello!"),
			state.SystemMessage("Answer in French."),
			state.UserMessage("How are you?"),
		}),
		Settings: pipeline.ModelSettings{Model: "gemini-2.5-flash"},
	}
	if _, err := m.Respond(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	body := srv.got()[0].Body
	want := jsonOf(t, `[
		{"role":"user","parts":[{"text":"hi"}]},
		{"role":"model","parts":[{"text":"Hello!"}]},
		{"role":"user","parts":[{"text":"How are you?"}]}
	]`)
	if diff := cmp.Diff(want, body["contents"]); diff != "" {
		t.Errorf("contents (-want +got):\n%s", diff)
	}
	wantSystem := jsonOf(t, `{"role":"user","parts":[{"text":"Be brief."},{"text":"Answer in French."}]}`)
	if diff := cmp.Diff(wantSystem, body["systemInstruction"]); diff != "" {
		t.Errorf("systemInstruction (-want +got):\n%s", diff)
	}
}

// Parts the adapter does not read (code the model ran with the code
// execution tool, and its result) are opaque items, sent back unchanged.
func TestOpaqueParts(t *testing.T) {
	srv := newServer(t, reply{file: "code.json"}, okReply)
	m := gemini.New(srv.client())
	resp, err := call(t, m, false, state.UserMessage("What is the sum of the first 50 primes?"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range resp.Items {
		got = append(got, it.Kind().String()+":"+it.Name())
	}
	wantKinds := []string{"assistant_message:", "opaque:gemini.executableCode", "opaque:gemini.codeExecutionResult", "assistant_message:"}
	if diff := cmp.Diff(wantKinds, got); diff != "" {
		t.Fatalf("items (-want +got):\n%s", diff)
	}
	if _, err := call(t, m, false, append([]state.Item{state.UserMessage("What is the sum of the first 50 primes?")}, resp.Items...)...); err != nil {
		t.Fatal(err)
	}
	var recorded struct {
		Candidates []struct {
			Content json.RawMessage `json:"content"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal([]byte(readTestdata(t, "code.json")), &recorded); err != nil {
		t.Fatal(err)
	}
	sent := srv.got()[1].Body["contents"].([]any)
	if diff := cmp.Diff(jsonOf(t, string(recorded.Candidates[0].Content)), sent[1]); diff != "" {
		t.Errorf("model content sent back (-recorded +sent):\n%s", diff)
	}
}
