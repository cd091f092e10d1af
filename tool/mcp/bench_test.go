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
	sinkOut string
	sinkErr error
)

type echoArgs struct {
	Message string `json:"message"`
}

// BenchmarkCall compares one call of an MCP tool, over the go-sdk's
// in-memory transport to an in-process server, with the same tool as a
// plain function tool (tool.Func), called the way the runner calls tools.
// The difference is the MCP overhead: JSON-RPC encoding both ways, the
// transport and the SDK's dispatch.
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
	run := state.NewRun("run-1", "a", 10)
	call := &pipeline.ToolCall{Turn: &pipeline.Turn{Run: run}, Name: "echo", CallID: "call_1", Arguments: `{"message":"hello"}`}
	for _, bm := range []struct {
		name string
		tool pipeline.Tool
	}{
		{name: "func", tool: tool.Func("echo", "Echoes.", echo)},
		{name: "mcp-inmemory", tool: ts.Tools()[0]},
	} {
		b.Run(bm.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				sinkOut, sinkErr = bm.tool.Call(ctx, call)
			}
			if sinkErr != nil || sinkOut != "Echo: hello" {
				b.Fatalf("Call = %q, %v", sinkOut, sinkErr)
			}
		})
	}
}
