package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// hostedTools declares every hosted tool with its options.
func hostedTools() []pipeline.Tool {
	return []pipeline.Tool{
		openai.WebSearch(responses.WebSearchToolParam{
			SearchContextSize: responses.WebSearchToolSearchContextSizeLow,
			Filters:           responses.WebSearchToolFiltersParam{AllowedDomains: []string{"go.dev"}},
		}),
		openai.FileSearch(responses.FileSearchToolParam{
			VectorStoreIDs: []string{"vs_1", "vs_2"},
			MaxNumResults:  param.NewOpt[int64](5),
			Filters: responses.FileSearchToolFiltersUnionParam{OfComparisonFilter: &shared.ComparisonFilterParam{
				Key: "region", Type: shared.ComparisonFilterTypeEq, Value: shared.ComparisonFilterValueUnionParam{OfString: param.NewOpt("eu")},
			}},
		}),
		openai.CodeInterpreter(responses.ToolCodeInterpreterParam{}),
		openai.CodeInterpreter(responses.ToolCodeInterpreterParam{Container: responses.ToolCodeInterpreterContainerUnionParam{OfString: param.NewOpt("cntr_1")}}),
		openai.ImageGeneration(responses.ToolImageGenerationParam{Quality: "low", Size: "1024x1024"}),
		openai.MCP(responses.ToolMcpParam{
			ServerLabel:  "deepwiki",
			ServerURL:    param.NewOpt("https://mcp.deepwiki.com/mcp"),
			AllowedTools: responses.ToolMcpAllowedToolsUnionParam{OfMcpAllowedTools: []string{"ask_question"}},
			Headers:      map[string]string{"X-Team": "core"},
			RequireApproval: responses.ToolMcpRequireApprovalUnionParam{
				OfMcpToolApprovalSetting: param.NewOpt("always"),
			},
		}),
		//lint:ignore SA1019 connectors are a remote MCP form the API still takes; the adapter must pass them through
		openai.MCP(responses.ToolMcpParam{ServerLabel: "drive", ConnectorID: "connector_googledrive", Authorization: param.NewOpt("token")}),
	}
}

var hostedToolsJSON = []string{
	`{"type":"web_search","filters":{"allowed_domains":["go.dev"]},"search_context_size":"low"}`,
	`{"vector_store_ids":["vs_1","vs_2"],"max_num_results":5,"filters":{"key":"region","type":"eq","value":"eu"},"type":"file_search"}`,
	`{"container":{"type":"auto"},"type":"code_interpreter"}`,
	`{"container":"cntr_1","type":"code_interpreter"}`,
	`{"quality":"low","size":"1024x1024","type":"image_generation"}`,
	`{"server_label":"deepwiki","server_url":"https://mcp.deepwiki.com/mcp","allowed_tools":["ask_question"],"headers":{"X-Team":"core"},"require_approval":"always","type":"mcp"}`,
	`{"server_label":"drive","authorization":"token","connector_id":"connector_googledrive","type":"mcp"}`,
}

// TestHostedToolsRequest: hosted tools go into the request's tools as
// openai-go encodes them, beside function tools; the model's hosted calls
// come back as hosted-call items and the run ends on its message.
func TestHostedToolsRequest(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			body := responseBody(t, "resp_h", itemFixture(t, "web_search_call"), itemFixture(t, "mcp_call"), itemFixture(t, "message"))
			srv := newServer(t, replyBody(body))
			agent := &pipeline.Agent{Name: "assistant", Model: openai.New(srv.client(0)), Settings: pipeline.ModelSettings{Model: "gpt-5-mini"},
				Tools: append(hostedTools(), weather)}
			out := runBoth(t, mode.stream, agent, "news?")
			if out.final != "Done and dusted." {
				t.Errorf("final %q", out.final)
			}
			if got, want := describe(out.items), []string{"user_message", "hosted_call(web_search_call)", "hosted_call(mcp_call)", "assistant_message"}; !equal(got, want) {
				t.Errorf("items %v, want %v", got, want)
			}
			var req struct {
				Tools []json.RawMessage `json:"tools"`
			}
			if err := json.Unmarshal(srv.Requests()[0].body, &req); err != nil {
				t.Fatal(err)
			}
			if len(req.Tools) != len(hostedToolsJSON)+1 {
				t.Fatalf("%d tools sent, want %d", len(req.Tools), len(hostedToolsJSON)+1)
			}
			for i, want := range hostedToolsJSON {
				if got := compact(t, req.Tools[i]); got != want {
					t.Errorf("tool %d:\n got %s\nwant %s", i, got, want)
				}
			}
			var fn struct{ Type, Name string }
			_ = json.Unmarshal(req.Tools[len(req.Tools)-1], &fn)
			if fn.Type != "function" || fn.Name != "get_weather" {
				t.Errorf("last tool %s, want the function get_weather", req.Tools[len(req.Tools)-1])
			}
		})
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestHostedToolNames(t *testing.T) {
	var names []string
	for _, tl := range hostedTools() {
		names = append(names, tl.Spec().Name)
	}
	want := []string{"web_search", "file_search", "code_interpreter", "code_interpreter", "image_generation", "mcp:deepwiki", "mcp:drive"}
	if !equal(names, want) {
		t.Errorf("names %v, want %v", names, want)
	}
	_, err := hostedTools()[0].Call(context.Background(), &pipeline.ToolCall{})
	if !errors.Is(err, openai.ErrUnsupportedTool) {
		t.Errorf("Call = %v, want ErrUnsupportedTool", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("HostedTool of a function tool did not panic")
		}
	}()
	openai.HostedTool(responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{Name: "f"}})
}

// TestHostedToolsChat: Chat Completions cannot send hosted tools; the call
// fails with a typed error before any request.
func TestHostedToolsChat(t *testing.T) {
	srv := newServer(t)
	c := call(false)
	c.Tools = []pipeline.ToolSpec{hostedTools()[0].Spec()}
	_, err := openai.NewChat(srv.client(0)).Respond(context.Background(), c)
	if !errors.Is(err, openai.ErrUnsupportedTool) {
		t.Fatalf("err = %v, want ErrUnsupportedTool", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

// TestChatRefusesHostedItems: history that holds a hosted call cannot be
// sent to Chat Completions; the call fails before any request.
func TestChatRefusesHostedItems(t *testing.T) {
	srv := newServer(t)
	ws, err := state.HostedCall(itemFixture(t, "web_search_call"))
	if err != nil {
		t.Fatal(err)
	}
	c := call(false)
	c.Input = state.ItemsOf(append(pipeline.UserInput("news?"), ws))
	_, err = openai.NewChat(srv.client(0)).Respond(context.Background(), c)
	if !errors.Is(err, openai.ErrUnsupportedItem) {
		t.Fatalf("err = %v, want ErrUnsupportedItem", err)
	}
	if ie, ok := errors.AsType[*openai.InputError](err); !ok || ie.Index != 1 || ie.Kind != state.KindHostedCall || ie.Part != -1 {
		t.Fatalf("err = %v, want an *InputError for the hosted call at input[1]", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

// TestUserContentParts: images and files in a user message go to the
// Responses API as they are, to Chat Completions as its content parts, and
// what Chat Completions cannot take is a typed error before the request.
func TestUserContentParts(t *testing.T) {
	msg := state.UserContent(state.TextPart("What is this?"), state.ImageURL("data:image/png;base64,iVBO", "low"),
		state.FileID("file-pdf"), state.FileData("a.txt", "data:text/plain;base64,aGk="))
	t.Run("responses", func(t *testing.T) {
		srv := newServer(t, reply{file: "responses_text.json"})
		c := call(false)
		c.Input = state.ItemsOf([]state.Item{msg})
		if _, err := openai.New(srv.client(0)).Respond(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		if in := inputOf(t, srv.Requests()[0]); len(in) != 1 || string(in[0]) != string(msg.Raw()) {
			t.Errorf("input %s, want %s", in, msg.Raw())
		}
	})
	t.Run("chat", func(t *testing.T) {
		srv := newServer(t, reply{file: "chat_text.json"})
		c := call(false)
		c.Input = state.ItemsOf([]state.Item{msg})
		if _, err := openai.NewChat(srv.client(0)).Respond(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		var body struct{ Messages []json.RawMessage }
		if err := json.Unmarshal(srv.Requests()[0].body, &body); err != nil {
			t.Fatal(err)
		}
		want := `{"content":[{"text":"What is this?","type":"text"},{"image_url":{"detail":"low","url":"data:image/png;base64,iVBO"},"type":"image_url"},` +
			`{"file":{"file_id":"file-pdf"},"type":"file"},{"file":{"file_data":"data:text/plain;base64,aGk=","filename":"a.txt"},"type":"file"}],"role":"user"}`
		if len(body.Messages) != 1 || compact(t, body.Messages[0]) != want {
			t.Errorf("messages %s\nwant %s", body.Messages, want)
		}
	})
	for _, bad := range []state.ContentPart{state.ImageFile("file-img", ""), state.FileURL("https://example.com/a.pdf")} {
		srv := newServer(t)
		c := call(false)
		c.Input = state.ItemsOf([]state.Item{state.UserContent(state.TextPart("see"), bad)})
		if _, err := openai.NewChat(srv.client(0)).Respond(context.Background(), c); !errors.Is(err, openai.ErrUnsupportedItem) {
			t.Errorf("err = %v, want ErrUnsupportedItem", err)
		}
		if len(srv.Requests()) != 0 {
			t.Error("a request was sent")
		}
	}
}
