package mcp_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool/mcp"
	"github.com/turnkit/turnkit/tracing"
)

// wirePart is a content part of a function_call_output as it goes to the
// model.
type wirePart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL string `json:"image_url"`
	Detail   string `json:"detail"`
	Filename string `json:"filename"`
	FileData string `json:"file_data"`
}

// outputOf returns the output of the function_call_output item: its parts,
// or its string when it has none.
func outputOf(t *testing.T, it state.Item) (text string, parts []wirePart) {
	t.Helper()
	var v struct {
		Type   string          `json:"type"`
		Output json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(it.Raw(), &v); err != nil || v.Type != "function_call_output" {
		t.Fatalf("item %s is not a function_call_output (%v)", it.Raw(), err)
	}
	if bytes.HasPrefix(v.Output, []byte(`"`)) {
		if err := json.Unmarshal(v.Output, &text); err != nil {
			t.Fatal(err)
		}
		return text, nil
	}
	if err := json.Unmarshal(v.Output, &parts); err != nil {
		t.Fatalf("output %s: %v", v.Output, err)
	}
	return "", parts
}

// outputs returns the run's tool outputs by tool name.
func outputs(t *testing.T, run *state.Run) map[string]state.Item {
	t.Helper()
	out := map[string]state.Item{}
	items := run.Items()
	for i := range items.Len() {
		if it := items.At(i); it.Kind() == state.KindToolOutput {
			out[it.Name()] = it
		}
	}
	return out
}

// decodeDataURL checks that u is a base64 data URL of the MIME type and
// returns its data.
func decodeDataURL(t *testing.T, u, mime string) []byte {
	t.Helper()
	prefix := "data:" + mime + ";base64,"
	if !strings.HasPrefix(u, prefix) {
		t.Fatalf("data URL %.60q… does not start with %q", u, prefix)
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(u, prefix))
	if err != nil {
		t.Fatalf("data URL: %v", err)
	}
	return b
}

// TestEverythingContent runs the reference server's tools through the
// Runner: the image of get-tiny-image and the blob of an embedded resource
// reach the model as input_image and input_file parts with data URLs; a
// text-only result and structured content stay a string output.
func TestEverythingContent(t *testing.T) {
	t.Parallel()
	for _, tr := range []struct {
		name   string
		server func(*testing.T) mcp.Server
	}{
		{name: "stdio", server: stdioEverything},
		{name: "streamable http", server: httpEverything},
	} {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			ts := connect(t, []mcp.Server{tr.server(t)})
			model := scripted.New(
				scripted.Respond(
					scripted.Call("get-tiny-image", `{}`),
					scripted.Call("get-resource-reference", `{"resourceType":"Blob","resourceId":1}`),
					scripted.Call("echo", `{"message":"hi"}`),
					scripted.Call("get-structured-content", `{"location":"Chicago"}`),
				),
				scripted.Reply("done"),
			)
			agent := &pipeline.Agent{Name: "a", Model: model, Tools: ts.Tools(mcp.Allow("get-tiny-image", "get-resource-reference", "echo", "get-structured-content"))}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := pipeline.NewRunner().Run(ctx, agent, pipeline.UserInput("show me"), pipeline.WithRunID("run_1"))
			if err != nil {
				t.Fatal(err)
			}
			outs := outputs(t, res.State())

			t.Run("image", func(t *testing.T) {
				it := outs["get-tiny-image"]
				_, parts := outputOf(t, it)
				if len(parts) != 3 || parts[0].Type != "input_text" || parts[1].Type != "input_image" || parts[2].Type != "input_text" {
					t.Fatalf("parts %+v, want text, image, text", parts)
				}
				if parts[0].Text != "Here's the image you requested:" || parts[2].Text != "The image above is the MCP logo." {
					t.Errorf("text parts %q, %q", parts[0].Text, parts[2].Text)
				}
				if png := decodeDataURL(t, parts[1].ImageURL, "image/png"); !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
					t.Errorf("image data is not a PNG: % x", png[:min(8, len(png))])
				}
				if parts[1].Detail != "auto" {
					t.Errorf("detail %q, want auto", parts[1].Detail)
				}
				if got, want := it.Text(), "Here's the image you requested:The image above is the MCP logo."; got != want {
					t.Errorf("Text() = %q, want %q", got, want)
				}
				// The model's next request carries the same item.
				second := model.Calls()[1].Input
				found := false
				for i := range second.Len() {
					found = found || second.At(i).Equal(it)
				}
				if !found {
					t.Error("the image output is not in the model's next input")
				}
			})
			t.Run("embedded blob", func(t *testing.T) {
				_, parts := outputOf(t, outs["get-resource-reference"])
				var file *wirePart
				for i := range parts {
					if parts[i].Type == "input_file" {
						file = &parts[i]
					}
				}
				if file == nil {
					t.Fatalf("parts %+v, want an input_file", parts)
				}
				if file.Filename != "1" {
					t.Errorf("filename %q, want the URI's last element, 1", file.Filename)
				}
				if data := decodeDataURL(t, file.FileData, "text/plain"); len(data) == 0 {
					t.Error("the file is empty")
				}
			})
			t.Run("text only", func(t *testing.T) {
				text, parts := outputOf(t, outs["echo"])
				if parts != nil || text != "Echo: hi" {
					t.Errorf("echo output %q %+v, want the string \"Echo: hi\"", text, parts)
				}
			})
			t.Run("structured", func(t *testing.T) {
				text, parts := outputOf(t, outs["get-structured-content"])
				if parts != nil || strings.Count(text, "humidity") != 1 {
					t.Errorf("structured output %q %+v, want a string with the structured content once", text, parts)
				}
			})
		})
	}
}

// media is an in-process server whose tools answer with every kind of
// content.
func media(t *testing.T) mcp.Server {
	png := []byte("\x89PNG\r\n\x1a\nfake")
	answer := func(res *sdk.CallToolResult) sdk.ToolHandler {
		return func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return res, nil }
	}
	return inProcess(t, "media", func(s *sdk.Server) {
		s.AddTool(&sdk.Tool{Name: "mixed", InputSchema: objectSchema}, answer(&sdk.CallToolResult{
			Content: []sdk.Content{
				&sdk.TextContent{Text: "chart:"},
				&sdk.ImageContent{Data: png, MIMEType: "image/png"},
				&sdk.ResourceLink{URI: "file:///srv/report.pdf", Name: "report"},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///srv/notes.txt", MIMEType: "text/plain", Text: "notes"}},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///srv/data.bin", Blob: []byte{1, 2, 3}}},
				&sdk.AudioContent{Data: []byte("RIFF"), MIMEType: "audio/wav"},
			},
			StructuredContent: map[string]any{"points": 3},
		}))
		s.AddTool(&sdk.Tool{Name: "audio", InputSchema: objectSchema}, answer(&sdk.CallToolResult{
			Content: []sdk.Content{&sdk.TextContent{Text: "listen:"}, &sdk.AudioContent{Data: []byte("RIFF"), MIMEType: "audio/wav"}},
		}))
		s.AddTool(&sdk.Tool{Name: "link", InputSchema: objectSchema}, answer(&sdk.CallToolResult{
			Content: []sdk.Content{&sdk.ResourceLink{URI: "file:///srv/report.pdf", Name: "report"}},
		}))
		s.AddTool(&sdk.Tool{Name: "broken", InputSchema: objectSchema}, answer(&sdk.CallToolResult{
			IsError: true,
			Content: []sdk.Content{&sdk.TextContent{Text: "no chart"}, &sdk.ImageContent{Data: png, MIMEType: "image/png"}},
		}))
	})
}

// TestCallContent: what each kind of MCP content becomes.
func TestCallContent(t *testing.T) {
	t.Parallel()
	ts := connect(t, []mcp.Server{media(t)})
	call := func(name string) (string, []state.ContentPart, error) {
		return find(t, ts.Tools(), name).(pipeline.ContentTool).CallContent(context.Background(), callOf(name, `{}`))
	}

	t.Run("mixed", func(t *testing.T) {
		text, parts, err := call("mixed")
		if err != nil {
			t.Fatal(err)
		}
		_, wire := outputOf(t, state.ToolOutputContent("call_1", "mixed", parts...))
		want := []wirePart{
			{Type: "input_text", Text: "chart:"},
			{Type: "input_image", Detail: "auto", ImageURL: "data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\nfake"))},
			{Type: "input_text", Text: `{"type":"resource_link","uri":"file:///srv/report.pdf","name":"report"}`},
			{Type: "input_text", Text: `{"type":"resource","mimeType":"text/plain","uri":"file:///srv/notes.txt","text":"notes"}`},
			{Type: "input_file", Filename: "data.bin", FileData: "data:application/octet-stream;base64,AQID"},
			{Type: "input_text", Text: `{"type":"audio","mimeType":"audio/wav","bytes":4}`},
			{Type: "input_text", Text: `{"points":3}`},
		}
		if len(wire) != len(want) {
			t.Fatalf("parts %+v, want %+v", wire, want)
		}
		for i := range want {
			if wire[i] != want[i] {
				t.Errorf("part %d = %+v, want %+v", i, wire[i], want[i])
			}
		}
		if text != state.JoinText(parts) {
			t.Errorf("text %q, want the parts' text %q", text, state.JoinText(parts))
		}
	})
	// Without an image or a blob the output is text, as Call gives it.
	for _, name := range []string{"audio", "link"} {
		t.Run(name, func(t *testing.T) {
			text, parts, err := call(name)
			want, callErr := find(t, ts.Tools(), name).Call(context.Background(), callOf(name, `{}`))
			if err != nil || callErr != nil || parts != nil || text != want {
				t.Errorf("CallContent = %q, %v, %v; want Call's %q, nil parts", text, parts, err, want)
			}
		})
	}
	t.Run("isError", func(t *testing.T) {
		_, parts, err := call("broken")
		var te *mcp.ToolError
		if !errors.As(err, &te) || parts != nil || !strings.Contains(te.Output, "no chart") || !strings.Contains(te.Output, `"type":"image"`) {
			t.Errorf("CallContent = %v, %v; want a *ToolError with the described output", parts, err)
		}
	})
	t.Run("Call stays text", func(t *testing.T) {
		out, err := find(t, ts.Tools(), "mixed").Call(context.Background(), callOf("mixed", `{}`))
		if err != nil || !strings.Contains(out, `"type":"image","mimeType":"image/png","bytes":12`) {
			t.Errorf("Call = %q, %v; want the image described", out, err)
		}
	})
}

// TestContentWithApprovalAndTracing: a call held by a server policy runs
// on resume and answers with its parts; its execute_tool span still
// carries the MCP attributes.
func TestContentWithApprovalAndTracing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ts := connect(t, []mcp.Server{media(t)})
	runner := pipeline.NewRunner(pipeline.WithMiddleware(
		tracing.Middleware(tracing.WithTracerProvider(tp)),
		approval.Require(mcp.FromServers("media")),
	))
	agent := &pipeline.Agent{Name: "a", Tools: ts.Tools(), Model: scripted.New(scripted.CallTool("mixed", `{}`), scripted.Reply("done"))}
	res, err := runner.Run(ctx, agent, pipeline.UserInput("chart"), pipeline.WithRunID("run_1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Interruptions()) != 1 {
		t.Fatalf("interruptions %+v, want the call held", res.Interruptions())
	}
	run := res.State()
	if err := run.Approve(res.Interruptions()[0].CallID); err != nil {
		t.Fatal(err)
	}
	res, err = runner.Resume(ctx, agent, run)
	if err != nil {
		t.Fatal(err)
	}
	if res.FinalOutput() != "done" {
		t.Errorf("final output %q", res.FinalOutput())
	}
	_, parts := outputOf(t, outputs(t, res.State())["mixed"])
	if len(parts) != 7 || parts[1].Type != "input_image" || parts[4].Type != "input_file" {
		t.Errorf("parts %+v, want the image and the file among them", parts)
	}
	mcpSpans := 0
	for _, s := range spans.Ended() {
		if s.Name() != "execute_tool mixed" {
			continue
		}
		for _, kv := range s.Attributes() {
			if kv.Key == "mcp.method.name" && kv.Value.AsString() == "tools/call" {
				mcpSpans++
			}
		}
	}
	if mcpSpans != 1 {
		t.Errorf("%d execute_tool spans with mcp.method.name, want 1 (the approved call)", mcpSpans)
	}
}

// TestTextResults tests WithTextResults: the tiny image arrives as a
// plain string output describing the image, as Call's text does.
func TestTextResults(t *testing.T) {
	t.Parallel()
	ts := connect(t, []mcp.Server{stdioEverything(t)}, mcp.WithTextResults())
	tools := ts.Tools(mcp.Allow("get-tiny-image"))
	model := scripted.New(scripted.Respond(scripted.Call("get-tiny-image", `{}`)), scripted.Reply("done"))
	agent := &pipeline.Agent{Name: "a", Model: model, Tools: tools}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := pipeline.NewRunner().Run(ctx, agent, pipeline.UserInput("show me"), pipeline.WithRunID("run_1"))
	if err != nil {
		t.Fatal(err)
	}
	it := outputs(t, res.State())["get-tiny-image"]
	if it.Content() != nil {
		t.Fatalf("output %s has content parts; want text only", it)
	}
	want, err := tools[0].Call(ctx, &pipeline.ToolCall{Name: "get-tiny-image", CallID: "call_x", Arguments: `{}`, Tool: tools[0]})
	if err != nil {
		t.Fatal(err)
	}
	if it.Text() != want || !strings.Contains(want, `"type":"image"`) {
		t.Errorf("output %q, want Call's text %q describing the image", it.Text(), want)
	}
}
