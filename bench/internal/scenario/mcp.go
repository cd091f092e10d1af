package scenario

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool"
	"github.com/turnkit/turnkit/tool/mcp"
)

// mcpMessage is what the MCP scenarios ask the echo tool to echo.
const mcpMessage = "hello"

// mcpEchoArgs are the echo tool's arguments, as the reference server's
// echo takes them.
type mcpEchoArgs struct {
	Message string `json:"message"`
}

// mcpEcho is the echo tool's body, the same as the reference server's.
func mcpEcho(_ context.Context, in mcpEchoArgs) (string, error) { return "Echo: " + in.Message, nil }

// mcpScenarios returns one tool call, per iteration, of the echo tool: as
// a plain function tool (tool.Func), the baseline; as the tool of an MCP
// server in the same process, a go-sdk server reached over the SDK's
// in-memory transport; and as the echo tool of the MCP reference server
// (@modelcontextprotocol/server-everything, installed by npm ci in
// tool/mcp/testdata/everything) run by node over stdio, skipped when node
// or the package is missing. The tool is called the way the runner calls
// it, with a run so that the idempotency key travels in _meta.
func mcpScenarios() []Scenario {
	out := []Scenario{
		{Name: "mcp/func", Group: "mcp", PerOp: 1, Unit: "call", Bench: func(b *testing.B) {
			mcpCalls(b, tool.Func("echo", "Echoes back the input string", mcpEcho))
		}},
		{Name: "mcp/inmemory", Group: "mcp", Baseline: "mcp/func", PerOp: 1, Unit: "call", Bench: func(b *testing.B) {
			mcpCalls(b, connectMCP(b, inMemoryServer(b)))
		}},
	}
	stdio := Scenario{Name: "mcp/stdio", Group: "mcp", Baseline: "mcp/func", PerOp: 1, Unit: "call"}
	if node, entry, skip := referenceServer(); skip != "" {
		stdio.Skip = skip
	} else {
		stdio.Bench = func(b *testing.B) {
			mcpCalls(b, connectMCP(b, mcp.Server{Name: "everything", Command: &mcp.Command{
				Path: node, Args: []string{entry, "stdio"}, TerminateGrace: 2 * time.Second,
			}}))
		}
	}
	return append(out, stdio)
}

// mcpCalls times one call of t, the echo tool, per iteration.
func mcpCalls(b *testing.B, t pipeline.Tool) {
	ctx := context.Background()
	run := state.NewRun("run-mcp", "bench")
	call := &pipeline.ToolCall{Turn: &pipeline.Turn{Run: run}, Tool: t, Name: "echo", CallID: "call_1",
		Arguments: `{"message":"` + mcpMessage + `"}`}
	var out string
	var err error
	b.ReportAllocs()
	for b.Loop() {
		out, err = t.Call(ctx, call)
	}
	if err != nil || out != "Echo: "+mcpMessage {
		b.Fatalf("echo = %q, %v; want %q", out, err, "Echo: "+mcpMessage)
	}
}

// inMemoryServer serves the echo tool from a go-sdk server in this
// process, over the SDK's in-memory transport, until b ends.
func inMemoryServer(b *testing.B) mcp.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "bench", Version: "v0"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echoes back the input string"},
		func(ctx context.Context, _ *sdk.CallToolRequest, in mcpEchoArgs) (*sdk.CallToolResult, any, error) {
			out, err := mcpEcho(ctx, in)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: out}}}, nil, err
		})
	st, ct := sdk.NewInMemoryTransports()
	ss, err := s.Connect(context.Background(), st, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = ss.Close()
		_ = ss.Wait()
	})
	return mcp.Server{Name: "bench", Transport: ct}
}

// connectMCP connects to srv until b ends and returns its echo tool.
func connectMCP(b *testing.B, srv mcp.Server) pipeline.Tool {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv.Allow = []string{"echo"}
	ts, err := mcp.Connect(ctx, []mcp.Server{srv})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ts.Close() })
	for _, t := range ts.Tools() {
		if t.Spec().Name == "echo" {
			return t
		}
	}
	b.Fatalf("server %s has no echo tool", srv.Name)
	return nil
}

// referenceServer returns node and the MCP reference server's entry point,
// which npm ci installs in tool/mcp/testdata/everything of this source
// tree, or why they cannot be used.
func referenceServer() (node, entry, skip string) {
	node, err := exec.LookPath("node")
	if err != nil {
		return "", "", "node is not installed (the stdio row runs the MCP reference server)"
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", "", "the source tree (for tool/mcp/testdata/everything) cannot be found"
	}
	entry = filepath.Join(filepath.Dir(file), "..", "..", "..", "tool", "mcp", "testdata", "everything",
		"node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		return "", "", "the MCP reference server is not installed: run npm ci in tool/mcp/testdata/everything"
	}
	return node, entry, ""
}
