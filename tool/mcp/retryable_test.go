package mcp_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/tool/mcp"
)

// TestRetryable tests that the reference server's annotations decide
// Retryable: echo is read-only, get-sum read-only and idempotent, and
// toggle-simulated-logging neither; a call of another tool is not.
func TestRetryable(t *testing.T) {
	t.Parallel()
	ts := connect(t, []mcp.Server{stdioEverything(t)})
	tools := ts.Tools()
	for name, want := range map[string]bool{"echo": true, "get-sum": true, "toggle-simulated-logging": false} {
		tool := find(t, tools, name)
		if got := tool.(*mcp.Tool).Retryable(); got != want {
			t.Errorf("%s: Retryable() = %v, want %v", name, got, want)
		}
		c := callOf(name, `{}`)
		c.Tool = tool
		if got := mcp.Retryable(c); got != want {
			t.Errorf("%s: mcp.Retryable(call) = %v, want %v", name, got, want)
		}
	}
	other := pipeline.NewTool(pipeline.ToolSpec{Name: "echo"}, func(context.Context, json.RawMessage) (string, error) { return "", nil })
	if mcp.Retryable(&pipeline.ToolCall{Name: "echo", Tool: other}) {
		t.Error("a function tool named like an MCP tool is Retryable")
	}
}
