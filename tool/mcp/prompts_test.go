package mcp_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool/mcp"
)

// TestEverythingPromptsAndResources lists, gets and reads the reference
// server's prompts and resources, and checks each comes back as the items
// and content parts a run takes as input.
func TestEverythingPromptsAndResources(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ts := connect(t, []mcp.Server{stdioEverything(t)})

	t.Run("prompts", func(t *testing.T) {
		prompts, err := ts.Prompts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]mcp.Prompt{}
		for _, p := range prompts {
			byName[p.Name] = p
		}
		args, ok := byName["args-prompt"]
		if !ok || args.Server != "everything" || len(args.Arguments) != 2 {
			t.Fatalf("prompts = %+v, want args-prompt of server everything with 2 arguments", prompts)
		}
		for _, a := range args.Arguments {
			if want := a.Name == "city"; a.Required != want {
				t.Errorf("argument %q: required %v, want %v", a.Name, a.Required, want)
			}
		}
		if _, ok := byName["simple-prompt"]; !ok {
			t.Errorf("no simple-prompt among %d prompts", len(prompts))
		}
	})
	t.Run("get prompt", func(t *testing.T) {
		items, err := ts.GetPrompt(ctx, "everything", "args-prompt", map[string]string{"city": "Oslo"})
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != 1 || items[0].Kind() != state.KindUserMessage || !strings.Contains(string(items[0].Raw()), "What's weather in Oslo?") {
			t.Fatalf("items = %v, want one user message asking about Oslo", items)
		}
	})
	t.Run("prompt with an embedded resource", func(t *testing.T) {
		items, err := ts.GetPrompt(ctx, "everything", "resource-prompt", map[string]string{"resourceType": "Blob", "resourceId": "3"})
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != 2 {
			t.Fatalf("got %d items, want the text and the resource", len(items))
		}
		parts := items[1].Content()
		if len(parts) != 1 || parts[0].Type() != "input_file" {
			t.Fatalf("the resource message holds %v, want one file part", parts)
		}
		if name, url := parts[0].FileData(); name != "3" || !strings.HasPrefix(url, "data:text/plain;base64,") {
			t.Errorf("file part %q, %.40q; want the blob as a data URL named 3", name, url)
		}
	})
	t.Run("prompt errors", func(t *testing.T) {
		var e *mcp.Error
		if _, err := ts.GetPrompt(ctx, "everything", "no-such-prompt", nil); !errors.As(err, &e) || !errors.Is(err, mcp.ErrProtocol) || e.Op != "get prompt" {
			t.Errorf("unknown prompt: %v, want an *Error of kind ErrProtocol", err)
		}
		if _, err := ts.GetPrompt(ctx, "nowhere", "simple-prompt", nil); !errors.Is(err, mcp.ErrUnknownServer) || !strings.Contains(err.Error(), `"nowhere"`) {
			t.Errorf("unknown server: %v, want ErrUnknownServer naming it", err)
		}
	})
	t.Run("resources", func(t *testing.T) {
		res, err := ts.Resources(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var doc mcp.Resource
		for _, r := range res {
			if strings.HasSuffix(r.URI, "/features.md") {
				doc = r
			}
		}
		if doc.Server != "everything" || doc.MIMEType != "text/markdown" {
			t.Fatalf("resources = %+v, want features.md as text/markdown", res)
		}
		parts, err := ts.ReadResource(ctx, "everything", doc.URI)
		if err != nil {
			t.Fatal(err)
		}
		if len(parts) != 1 || parts[0].Type() != "input_text" || parts[0].Text() == "" {
			t.Fatalf("read %s: %v, want one non-empty text part", doc.URI, parts)
		}
		// The parts make a user message a run takes as input.
		msg := state.UserContent(append([]state.ContentPart{state.TextPart("Summarise:")}, parts...)...)
		if msg.Kind() != state.KindUserMessage || len(msg.Content()) != 2 {
			t.Errorf("user message from the resource: %v", msg)
		}
	})
	t.Run("binary resource", func(t *testing.T) {
		parts, err := ts.ReadResource(ctx, "everything", "demo://resource/dynamic/blob/7")
		if err != nil {
			t.Fatal(err)
		}
		if len(parts) != 1 || parts[0].Type() != "input_file" {
			t.Fatalf("parts = %v, want one file part", parts)
		}
	})
	t.Run("resource errors", func(t *testing.T) {
		var e *mcp.Error
		if _, err := ts.ReadResource(ctx, "everything", "demo://nothing/here"); !errors.As(err, &e) || e.Op != "read resource" {
			t.Errorf("unknown resource: %v, want an *Error of op read resource", err)
		}
		if _, err := ts.ReadResource(ctx, "nowhere", "demo://x"); !errors.Is(err, mcp.ErrUnknownServer) {
			t.Errorf("unknown server: %v, want ErrUnknownServer", err)
		}
	})
}
