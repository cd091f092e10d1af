package tool_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool"
)

type chartArgs struct {
	Title string `json:"title"`
}

func TestFuncContent(t *testing.T) {
	t.Parallel()
	image := state.ImageURL("https://example.com/c.png", "")
	tests := []struct {
		name      string
		give      tool.Content
		wantText  string
		wantParts []state.ContentPart
	}{
		{name: "parts", give: tool.Content{state.TextPart("a "), image, state.TextPart("b")}, wantText: "a b", wantParts: []state.ContentPart{state.TextPart("a "), image, state.TextPart("b")}},
		{name: "image only", give: tool.Content{image}, wantText: "", wantParts: []state.ContentPart{image}},
		{name: "empty", give: tool.Content{}},
		{name: "nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			chart := tool.Func("chart", "Draws a chart.", func(ctx context.Context, in chartArgs) (tool.Content, error) {
				return tt.give, nil
			})
			ct, ok := chart.(pipeline.ContentTool)
			if !ok {
				t.Fatal("a Func returning Content is not a pipeline.ContentTool")
			}
			call := &pipeline.ToolCall{CallID: "c1", Arguments: `{"title":"x"}`}
			text, parts, err := ct.CallContent(context.Background(), call)
			if err != nil || text != tt.wantText {
				t.Errorf("CallContent = %q, %v; want %q", text, err, tt.wantText)
			}
			if d := cmp.Diff(tt.wantParts, parts, cmp.AllowUnexported(state.ContentPart{})); d != "" {
				t.Errorf("parts (-want +got):\n%s", d)
			}
			if out, err := chart.Call(context.Background(), call); err != nil || out != tt.wantText {
				t.Errorf("Call = %q, %v; want %q", out, err, tt.wantText)
			}
		})
	}
}

func TestFuncContentErrors(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	chart := tool.Func("chart", "Draws a chart.", func(ctx context.Context, in chartArgs) (tool.Content, error) {
		return tool.Content{state.TextPart("lost")}, boom
	}, tool.NeedsApproval(true))
	if _, ok := chart.(pipeline.ApprovalRequirer); !ok {
		t.Error("NeedsApproval: not an ApprovalRequirer")
	}
	ct := chart.(pipeline.ContentTool)
	if text, parts, err := ct.CallContent(context.Background(), &pipeline.ToolCall{Arguments: `{"title":"x"}`}); !errors.Is(err, boom) || text != "" || parts != nil {
		t.Errorf("CallContent = %q, %v, %v; want boom and nothing else", text, parts, err)
	}
	_, parts, err := ct.CallContent(context.Background(), &pipeline.ToolCall{Arguments: `{"title":1}`})
	if _, ok := errors.AsType[*pipeline.ArgumentError](err); !ok || parts != nil {
		t.Errorf("CallContent(bad arguments) = %v, %v; want an ArgumentError", parts, err)
	}
}

func TestFuncStringHasNoParts(t *testing.T) {
	t.Parallel()
	echo := tool.Func("echo", "Echoes.", func(ctx context.Context, in chartArgs) (string, error) { return in.Title, nil })
	text, parts, err := echo.(pipeline.ContentTool).CallContent(context.Background(), &pipeline.ToolCall{Arguments: `{"title":"x"}`})
	if text != "x" || parts != nil || err != nil {
		t.Errorf("CallContent = %q, %v, %v; want x and no parts", text, parts, err)
	}
}
