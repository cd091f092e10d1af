package mcp

import (
	"encoding/json"
	"errors"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/turnkit/turnkit/state"
)

// FuzzResultContent feeds a tool's reading of a result (the text Call
// returns and the content parts CallContent returns) every result the
// MCP SDK decodes from arbitrary bytes. It needs no server. It must never
// panic; a refusal is an *Error of kind ErrProtocol or a *ToolError; the
// parts, made into a tool output item, parse back to the same parts, and
// their text is the text returned.
func FuzzResultContent(f *testing.F) {
	for _, seed := range []string{
		`{"content":[{"type":"text","text":"hello"}]}`,
		`{"content":[{"type":"text","text":"see"},{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"file:///a/b.pdf","mimeType":"application/pdf","blob":"JVBERi0="}}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"file:///a.txt","text":"words"}},{"type":"image","data":"AA=="}]}`,
		`{"content":[{"type":"audio","data":"AAAA","mimeType":"audio/wav"},{"type":"resource_link","uri":"x://y","name":"y"}],"structuredContent":{"n":1}}`,
		`{"content":[{"type":"text","text":"{\"n\":1}"}],"structuredContent":{"n":1}}`,
		`{"content":[{"type":"text","text":"boom"}],"isError":true}`,
		`{"content":[null]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var res sdk.CallToolResult
		if json.Unmarshal(data, &res) != nil {
			return // the SDK refused the bytes before the tool saw a result
		}
		for _, textOnly := range []bool{false, true} {
			tl := &Tool{server: "fuzz", name: "echo", textOnly: textOnly}
			text, parts, err := tl.content(&res)
			if err != nil {
				var (
					me *Error
					te *ToolError
				)
				if !(errors.As(err, &me) && errors.Is(err, ErrProtocol)) && !errors.As(err, &te) {
					t.Fatalf("untyped error %T: %v", err, err)
				}
				if text != "" || parts != nil {
					t.Fatal("a result returned with an error")
				}
				continue
			}
			if parts == nil {
				continue
			}
			if textOnly {
				t.Fatal("content parts from a text-only tool")
			}
			if got := state.JoinText(parts); got != text {
				t.Fatalf("text %q, want the parts' text %q", text, got)
			}
			it := state.ToolOutputContent("call_1", "echo", parts...)
			again, err := state.ParseItem(it.Kind(), it.Raw())
			if err != nil {
				t.Fatalf("the output item %s does not parse again: %v", it.Raw(), err)
			}
			back := state.ToolOutputContent("call_1", "echo", again.Content()...)
			if string(back.Raw()) != string(it.Raw()) || again.Text() != text {
				t.Fatalf("parts do not load back equal:\n%s\n%s", back.Raw(), it.Raw())
			}
		}
	})
}
