package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/responses"

	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool"
)

// weatherChart is a get_weather tool that answers with a chart: text, an
// image by data URL, an image by file ID and a file.
func weatherChart() pipeline.Tool {
	type args struct {
		Location string `json:"location"`
	}
	return tool.Func("get_weather", "Weather as a chart.", func(ctx context.Context, in args) (tool.Content, error) {
		return tool.Content{
			state.TextPart("Chart for " + in.Location + ":"),
			state.ImageURL("data:image/png;base64,iVBORw0KGgo=", "high"),
			state.ImageFile("file-img", ""),
			state.FileData("week.csv", "data:text/csv;base64,YSwx"),
		}, nil
	})
}

// TestToolContentResponses: a tool's content parts go to the Responses API
// as the function_call_output's output list, in the shape openai-go's
// ResponseInputItemFunctionCallOutputParam reads, plain and streamed.
func TestToolContentResponses(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			srv := newServer(t, reply{file: "responses_tool_call.json"}, reply{file: "responses_final.json"})
			agent := &pipeline.Agent{Name: "assistant", Model: openai.New(srv.client(0)), Settings: pipeline.ModelSettings{Model: "gpt-5-mini"},
				Tools: []pipeline.Tool{weatherChart()}}
			out := runBoth(t, mode.stream, agent, "Weather in Paris?")
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			input := inputOf(t, reqs[1])
			got := string(input[len(input)-1])
			want := `{"type":"function_call_output","call_id":"call_unLAR8MvFNptuiZK6K6HCy5k","output":[` +
				`{"type":"input_text","text":"Chart for Paris, France:"},` +
				`{"type":"input_image","detail":"high","image_url":"data:image/png;base64,iVBORw0KGgo="},` +
				`{"type":"input_image","detail":"auto","file_id":"file-img"},` +
				`{"type":"input_file","filename":"week.csv","file_data":"data:text/csv;base64,YSwx"}]}`
			if got != want {
				t.Errorf("output item sent\n got %s\nwant %s", got, want)
			}
			var param responses.ResponseInputItemFunctionCallOutputParam
			if err := json.Unmarshal(input[len(input)-1], &param); err != nil {
				t.Fatal(err)
			}
			parts := param.Output.OfResponseFunctionCallOutputItemArray
			if len(parts) != 4 || parts[0].OfInputText == nil || parts[0].OfInputText.Text != "Chart for Paris, France:" ||
				parts[1].OfInputImage == nil || parts[1].OfInputImage.ImageURL.Value != "data:image/png;base64,iVBORw0KGgo=" || parts[1].OfInputImage.Detail != "high" ||
				parts[2].OfInputImage == nil || parts[2].OfInputImage.FileID.Value != "file-img" ||
				parts[3].OfInputFile == nil || parts[3].OfInputFile.Filename.Value != "week.csv" || parts[3].OfInputFile.FileData.Value != "data:text/csv;base64,YSwx" {
				t.Errorf("openai-go reads the output as %+v", parts)
			}
			var stored state.Item
			for _, it := range out.items {
				if it.Kind() == state.KindToolOutput {
					stored = it
				}
			}
			if string(stored.Raw()) != want || stored.Text() != "Chart for Paris, France:" {
				t.Errorf("recorded output %s %q", stored.Raw(), stored.Text())
			}
		})
	}
}

// TestToolContentChat: Chat Completions takes a tool output of text parts
// as its text, and refuses one with an image or a file before the request,
// naming the call and the part.
func TestToolContentChat(t *testing.T) {
	call := state.ToolCall("", "call_1", "get_weather", `{}`)
	t.Run("text parts", func(t *testing.T) {
		for _, mode := range modes {
			srv := newServer(t, reply{file: "chat_text.json"})
			c := callFor(mode.stream, call, state.ToolOutputContent("call_1", "get_weather", state.TextPart("sunny "), state.TextPart("and warm")))
			if _, err := openai.NewChat(srv.client(0)).Respond(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			var body struct{ Messages []json.RawMessage }
			if err := json.Unmarshal(srv.Requests()[0].body, &body); err != nil {
				t.Fatal(err)
			}
			want := `{"role":"tool","tool_call_id":"call_1","content":"sunny and warm"}`
			if got := compact(t, body.Messages[len(body.Messages)-1]); got != want {
				t.Errorf("%s: tool message %s, want %s", mode.name, got, want)
			}
		}
	})
	tests := []struct {
		name     string
		give     state.ContentPart
		wantText string
	}{
		{name: "image by URL", give: state.ImageURL("https://example.com/c.png", ""), wantText: "content part 1 is an image (input_image)"},
		{name: "image by file ID", give: state.ImageFile("file-img", ""), wantText: "content part 1 is an image (input_image)"},
		{name: "file", give: state.FileID("file-pdf"), wantText: "content part 1 is a file (input_file)"},
	}
	for _, tt := range tests {
		for _, mode := range modes {
			t.Run(tt.name+"/"+mode.name, func(t *testing.T) {
				srv := newServer(t)
				c := callFor(mode.stream, call, state.ToolOutputContent("call_1", "get_weather", state.TextPart("see"), tt.give))
				_, err := openai.NewChat(srv.client(0)).Respond(context.Background(), c)
				if !errors.Is(err, openai.ErrUnsupportedItem) {
					t.Fatalf("err = %v, want ErrUnsupportedItem", err)
				}
				ie, ok := errors.AsType[*openai.InputError](err)
				if !ok || ie.Index != 2 || ie.Kind != state.KindToolOutput || ie.CallID != "call_1" || ie.Part != 1 {
					t.Fatalf("err = %#v, want an *InputError at input[2], call_1, part 1", ie)
				}
				for _, want := range []string{"input[2]", "call call_1", tt.wantText, "text only"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
				if n := len(srv.Requests()); n != 0 {
					t.Errorf("%d requests sent", n)
				}
			})
		}
	}
}

// callFor returns a model call whose input is a user message, then items.
func callFor(stream bool, items ...state.Item) *pipeline.ModelCall {
	c := call(stream)
	c.Input = state.ItemsOf(append(pipeline.UserInput("Weather?"), items...))
	return c
}
