package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/model/anthropic"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

var modes = []struct {
	name   string
	stream bool
}{{"plain", false}, {"stream", true}}

func weatherAgent(m pipeline.Model) *pipeline.Agent {
	return &pipeline.Agent{
		Name:  "weather",
		Model: m,
		Tools: []pipeline.Tool{pipeline.NewTool(pipeline.ToolSpec{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)},
			func(ctx context.Context, args json.RawMessage) (string, error) { return "sunny, 22C", nil })},
	}
}

// messagesOf returns the messages of a request body.
func messagesOf(t *testing.T, body []byte) []struct {
	Role    string            `json:"role"`
	Content []json.RawMessage `json:"content"`
} {
	t.Helper()
	var req struct {
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("request body: %v", err)
	}
	return req.Messages
}

func compactJSON(t *testing.T, raw []byte) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestThinkingReplayedVerbatim: thinking and redacted_thinking blocks
// become reasoning items, and the next request sends them back in the
// assistant message exactly as the API sent them (signature and data
// included), before the text and the tool_use; the tool_result follows
// in the user message. Plain and streamed runs record the same items.
func TestThinkingReplayedVerbatim(t *testing.T) {
	var plain []state.Item
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			srv := newFakeServer(t, "thinking_tool_use.json", "final.json")
			m := anthropic.New(srv.client(), anthropic.WithModel("claude-sonnet-4-5"), anthropic.WithThinking(2048))
			res := run(t, mode.stream, weatherAgent(m), "What is the weather in Paris?")
			if res.FinalOutput() != "It is sunny and 22C in Paris." {
				t.Errorf("final output %q", res.FinalOutput())
			}
			items := res.NewItems()
			var kinds []string
			for _, it := range items {
				kinds = append(kinds, it.Kind().String())
			}
			want := []string{"user_message", "reasoning", "reasoning", "assistant_message", "tool_call", "tool_output", "assistant_message"}
			if diff := cmp.Diff(want, kinds); diff != "" {
				t.Fatalf("kinds (-want +got):\n%s", diff)
			}
			if items[1].Text() != "The user asks for the weather in Paris. I should call get_weather with city Paris." {
				t.Errorf("thinking text %q", items[1].Text())
			}
			if items[4].CallID() != "toolu_01A09q90qw90lq917835lq9" || items[4].Text() != `{"city":"Paris"}` {
				t.Errorf("call %v %s", items[4], items[4].Text())
			}
			if mode.stream {
				for i := range plain {
					if !plain[i].Equal(items[i]) {
						t.Errorf("item %d: plain %s, streamed %s", i, plain[i].Raw(), items[i].Raw())
					}
				}
			} else {
				plain = items
			}
			// Usage: input counts cache reads and writes; cached counts reads.
			if u := res.Usage(); u.InputTokens != 472+1024+2048+590+3072 || u.CachedTokens != 2048+3072 || u.OutputTokens != 189+14 {
				t.Errorf("usage %+v", u)
			}

			var recorded struct {
				Content []json.RawMessage `json:"content"`
			}
			if err := json.Unmarshal(readTestdata(t, "thinking_tool_use.json"), &recorded); err != nil {
				t.Fatal(err)
			}
			msgs := messagesOf(t, srv.bodies()[1])
			if len(msgs) != 3 || msgs[1].Role != "assistant" || msgs[2].Role != "user" {
				t.Fatalf("second request messages: %+v", msgs)
			}
			if len(msgs[1].Content) != 4 {
				t.Fatalf("assistant message has %d blocks, want 4", len(msgs[1].Content))
			}
			for i := range 4 {
				if got, want := compactJSON(t, msgs[1].Content[i]), compactJSON(t, recorded.Content[i]); got != want {
					t.Errorf("assistant block %d:\n got %s\nwant %s", i, got, want)
				}
			}
			if got := compactJSON(t, msgs[2].Content[0]); got != `{"type":"tool_result","tool_use_id":"toolu_01A09q90qw90lq917835lq9","content":"sunny, 22C"}` {
				t.Errorf("tool result block %s", got)
			}
			var req struct {
				Thinking json.RawMessage `json:"thinking"`
			}
			_ = json.Unmarshal(srv.bodies()[0], &req)
			if string(req.Thinking) != `{"type":"enabled","budget_tokens":2048}` {
				t.Errorf("thinking setting %s", req.Thinking)
			}
		})
	}
}

// TestServerToolBlocksOpaque: blocks the adapter does not read (a server
// tool's use and result) are kept as opaque items and sent back as they
// came, between the text blocks.
func TestServerToolBlocksOpaque(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			srv := newFakeServer(t, "server_tool.json", "final.json")
			m := anthropic.New(srv.client(), anthropic.WithModel("claude-sonnet-4-5"))
			agent := &pipeline.Agent{Name: "search", Model: m}
			res := run(t, mode.stream, agent, "Weather in Paris?")
			var names []string
			for _, it := range res.NewItems() {
				names = append(names, it.Kind().String()+":"+it.Name())
			}
			want := []string{"user_message:", "assistant_message:", "opaque:anthropic.server_tool_use", "opaque:anthropic.web_search_tool_result", "assistant_message:"}
			if diff := cmp.Diff(want, names); diff != "" {
				t.Fatalf("items (-want +got):\n%s", diff)
			}
			// A second run of the same conversation replays them.
			if _, err := pipeline.NewRunner().Run(context.Background(), agent, append(res.NewItems(), state.UserMessage("And tomorrow?"))); err != nil {
				t.Fatal(err)
			}
			msgs := messagesOf(t, srv.bodies()[1])
			var recorded struct {
				Content []json.RawMessage `json:"content"`
			}
			_ = json.Unmarshal(readTestdata(t, "server_tool.json"), &recorded)
			for i := 1; i <= 2; i++ {
				if !jsonEqual(msgs[1].Content[i], recorded.Content[i]) {
					t.Errorf("block %d sent %s, want %s", i, msgs[1].Content[i], recorded.Content[i])
				}
			}
		})
	}
}

// TestInputRefused: items and parts the Messages API cannot take fail the
// call before any request, with an *InputError naming the item.
func TestInputRefused(t *testing.T) {
	hosted, _ := state.HostedCall([]byte(`{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"q"}}`))
	foreign, _ := state.Opaque([]byte(`{"type":"compaction_summary","id":"cs_1","status":"completed"}`))
	tests := []struct {
		name  string
		input []state.Item
		index int
		part  int
	}{
		{"hosted call", []state.Item{state.UserMessage("hi"), hosted}, 1, -1},
		{"foreign opaque", []state.Item{foreign, state.UserMessage("hi")}, 0, -1},
		{"image by file ID", []state.Item{state.UserContent(state.TextPart("see"), state.ImageFile("file-abc", ""))}, 0, 1},
		{"csv file", []state.Item{state.UserContent(state.FileData("w.csv", "data:text/csv;base64,YSwx"))}, 0, 0},
		{"tool output file by ID", []state.Item{
			state.UserMessage("hi"),
			state.ToolCall("", "toolu_1", "get_weather", `{}`),
			state.ToolOutputContent("toolu_1", "get_weather", state.TextPart("chart"), state.FileID("file-x")),
		}, 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t)
			m := anthropic.New(srv.client(), anthropic.WithModel("claude-sonnet-4-5"))
			_, err := m.Respond(context.Background(), &pipeline.ModelCall{Agent: &pipeline.Agent{Name: "a"}, Input: state.ItemsOf(tt.input)})
			ie, ok := errors.AsType[*anthropic.InputError](err)
			if !ok {
				t.Fatalf("err = %v, want an *InputError", err)
			}
			if !errors.Is(err, anthropic.ErrUnsupportedItem) || ie.Index != tt.index || ie.Part != tt.part {
				t.Errorf("InputError %+v (%v), want index %d part %d", ie, err, tt.index, tt.part)
			}
			if n := len(srv.bodies()); n != 0 {
				t.Errorf("%d requests sent, want none", n)
			}
		})
	}
}

// TestRequestShape: the request carries the documented shapes: system
// blocks, images and documents in the user message, tools with
// cache_control, the structured output format, tool_choice.
func TestRequestShape(t *testing.T) {
	srv := newFakeServer(t, "final.json")
	m := anthropic.New(srv.client(), anthropic.WithModel("claude-sonnet-4-5"), anthropic.WithMaxTokens(1000),
		anthropic.WithCacheControl(anthropic.CacheSystem, anthropic.CacheTools, anthropic.CacheHistory))
	parallel := false
	_, err := m.Respond(context.Background(), &pipeline.ModelCall{
		Agent:        &pipeline.Agent{Name: "a"},
		Instructions: "Be brief.",
		Input: state.ItemsOf([]state.Item{state.UserContent(
			state.TextPart("Read these."),
			state.ImageURL("data:image/png;base64,iVBORw0KGgo=", "high"),
			state.ImageURL("https://example.com/a.jpg", ""),
			state.FileData("report.pdf", "data:application/pdf;base64,JVBERi0x"),
			state.FileData("notes.txt", "data:text/plain;base64,aGVsbG8="),
		)}),
		Tools:    []pipeline.ToolSpec{{Name: "get_weather", Description: "Weather.", Parameters: json.RawMessage(`{"type":"object"}`), Strict: true}},
		Settings: pipeline.ModelSettings{ToolChoice: "required", ParallelToolCalls: &parallel},
		Output:   pipeline.OutputSpec{Name: "w", Schema: json.RawMessage(`{"type":"object"}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"claude-sonnet-4-5","max_tokens":1000,` +
		`"system":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}],` +
		`"messages":[{"role":"user","content":[{"type":"text","text":"Read these."},` +
		`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},` +
		`{"type":"image","source":{"type":"url","url":"https://example.com/a.jpg"}},` +
		`{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0x"},"title":"report.pdf"},` +
		`{"type":"document","source":{"type":"text","media_type":"text/plain","data":"hello"},"title":"notes.txt","cache_control":{"type":"ephemeral"}}]}],` +
		`"tools":[{"name":"get_weather","description":"Weather.","input_schema":{"type":"object"},"strict":true,"cache_control":{"type":"ephemeral"}}],` +
		`"tool_choice":{"type":"any","disable_parallel_tool_use":true},` +
		`"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}}}`
	if got := compactJSON(t, srv.bodies()[0]); got != want {
		t.Errorf("request:\n got %s\nwant %s", got, want)
	}
}

func jsonEqual(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return cmp.Equal(va, vb)
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// run runs agent on input, plain or streamed, and fails the test on error.
func run(t *testing.T, stream bool, agent *pipeline.Agent, input string) *pipeline.Result {
	t.Helper()
	r := pipeline.NewRunner()
	if !stream {
		res, err := r.Run(context.Background(), agent, pipeline.UserInput(input))
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		return res
	}
	var res *pipeline.Result
	for ev, err := range r.Stream(context.Background(), agent, pipeline.UserInput(input)) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if c, ok := ev.(pipeline.RunCompleted); ok {
			res = c.Result
		}
	}
	return res
}

// TestOtherProvidersItemsNotSent: an opaque item another adapter made for
// its own provider (model/gemini's, type "gemini.<kind>" with its part
// under "gemini") is left out of the request and not refused, as another
// provider's reasoning is; an opaque item of no provider is still refused.
func TestOtherProvidersItemsNotSent(t *testing.T) {
	code, err := state.Opaque([]byte(`{"type":"gemini.executableCode","gemini":{"executableCode":{"language":"PYTHON","code":"print(42)"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := newFakeServer(t) // answers with an error: only the request matters here
	m := anthropic.New(srv.client(), anthropic.WithModel("claude-sonnet-4-5"))
	_, err = m.Respond(context.Background(), &pipeline.ModelCall{Agent: &pipeline.Agent{Name: "a"}, Input: state.ItemsOf([]state.Item{state.UserMessage("hi"), code})})
	if _, refused := errors.AsType[*anthropic.InputError](err); refused {
		t.Fatalf("Respond = %v, want the request sent without the Gemini item", err)
	}
	bodies := srv.bodies()
	if len(bodies) != 1 || bytes.Contains(bodies[0], []byte("executableCode")) || !bytes.Contains(bodies[0], []byte(`"hi"`)) {
		t.Fatalf("requests %q, want one with the user message and without the Gemini item", bodies)
	}
}

// TestOutputToolRequest: with WithOutputTool and no tools of the agent's
// own, the request carries the output tool alone and forces it by name,
// with no output_config; thinking, or an agent tool of the output's name,
// fails the call before the request.
func TestOutputToolRequest(t *testing.T) {
	srv := newFakeServer(t, "final.json")
	m := anthropic.New(srv.client(), anthropic.WithModel("claude-3-5-haiku"), anthropic.WithOutputTool())
	call := &pipeline.ModelCall{
		Agent: &pipeline.Agent{Name: "a"},
		Input: state.ItemsOf([]state.Item{state.UserMessage("Weather in Paris?")}),
		Output: pipeline.OutputSpec{Name: "weather", Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`),
			Strict: true},
	}
	if _, err := m.Respond(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	want := `{"model":"claude-3-5-haiku","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Weather in Paris?"}]}],` +
		`"tools":[{"name":"weather","description":"Give the final answer, as this tool's input.","input_schema":{"type":"object","properties":{"city":{"type":"string"}}},"strict":true}],` +
		`"tool_choice":{"type":"tool","name":"weather"}}`
	if got := compactJSON(t, srv.bodies()[0]); got != want {
		t.Errorf("request:\n got %s\nwant %s", got, want)
	}

	thinking := anthropic.New(srv.client(), anthropic.WithModel("claude-3-5-haiku"), anthropic.WithOutputTool(), anthropic.WithThinking(1024))
	if _, err := thinking.Respond(context.Background(), call); err == nil {
		t.Error("an output tool with thinking on was sent")
	}
	clash := *call
	clash.Tools = []pipeline.ToolSpec{{Name: "weather"}}
	if _, err := m.Respond(context.Background(), &clash); err == nil {
		t.Error("an output tool named as an agent tool was sent")
	}
	if n := len(srv.bodies()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}
