package mcp_test

import (
	"context"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool"
	"github.com/turnkit/turnkit/tool/mcp"
)

var (
	sinkOut   string
	sinkParts []state.ContentPart
	sinkErr   error
)

type echoArgs struct {
	Message string `json:"message"`
}

// BenchmarkCall compares one call of an MCP tool, over the go-sdk's
// in-memory transport to an in-process server, with the same tool as a
// plain function tool (tool.Func), called the way the runner calls tools.
// The difference is the MCP overhead: JSON-RPC encoding both ways, the
// transport and the SDK's dispatch. mcp-inmemory-content calls the MCP
// tool through CallContent, as the runner does: a text-only result costs
// what Call costs.
func BenchmarkCall(b *testing.B) {
	echo := func(_ context.Context, in echoArgs) (string, error) { return "Echo: " + in.Message, nil }
	srv := inProcess(b, "bench", func(s *sdk.Server) {
		sdk.AddTool(s, &sdk.Tool{Name: "echo"}, func(ctx context.Context, _ *sdk.CallToolRequest, in echoArgs) (*sdk.CallToolResult, any, error) {
			out, err := echo(ctx, in)
			return text(out), nil, err
		})
	})
	ts, err := mcp.Connect(context.Background(), []mcp.Server{srv})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ts.Close() })
	run := state.NewRun("run-1", "a")
	call := &pipeline.ToolCall{Turn: &pipeline.Turn{Run: run}, Name: "echo", CallID: "call_1", Arguments: `{"message":"hello"}`}
	for _, bm := range []struct {
		name    string
		tool    pipeline.Tool
		content bool // call CallContent
	}{
		{name: "func", tool: tool.Func("echo", "Echoes.", echo)},
		{name: "mcp-inmemory", tool: ts.Tools()[0]},
		{name: "mcp-inmemory-content", tool: ts.Tools()[0], content: true},
	} {
		b.Run(bm.name, func(b *testing.B) {
			ctx := context.Background()
			ct, _ := bm.tool.(pipeline.ContentTool)
			b.ReportAllocs()
			for b.Loop() {
				if bm.content {
					sinkOut, sinkParts, sinkErr = ct.CallContent(ctx, call)
				} else {
					sinkOut, sinkErr = bm.tool.Call(ctx, call)
				}
			}
			if sinkErr != nil || sinkOut != "Echo: hello" || sinkParts != nil {
				b.Fatalf("Call = %q, %v, %v", sinkOut, sinkParts, sinkErr)
			}
		})
	}
}
