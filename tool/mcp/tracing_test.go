package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/turnkit/turnkit/tool/mcp"
)

// TestTracingFacts: what a tool tells tracing about its server and
// session, over stdio and over an in-memory transport.
func TestTracingFacts(t *testing.T) {
	t.Parallel()
	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		ts := connect(t, []mcp.Server{helper(t)})
		tl := find(t, ts.Tools(), "count").(*mcp.Tool)
		if kind, host, port := tl.MCPTransport(); kind != "stdio" || host != "" || port != 0 {
			t.Errorf("MCPTransport = %q, %q, %d; want stdio with no address", kind, host, port)
		}
		if id, version := tl.MCPSession(); id != "" || version == "" {
			t.Errorf("MCPSession = %q, %q; want no session ID (stdio has none) and a protocol version", id, version)
		}
	})
	t.Run("in memory", func(t *testing.T) {
		t.Parallel()
		srv := inProcess(t, "mem", func(s *sdk.Server) {
			s.AddTool(&sdk.Tool{Name: "noop", InputSchema: objectSchema}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return text("ok"), nil
			})
		})
		ts := connect(t, []mcp.Server{srv})
		tl := find(t, ts.Tools(), "noop").(*mcp.Tool)
		if kind, host, port := tl.MCPTransport(); kind != "" || host != "" || port != 0 {
			t.Errorf("MCPTransport = %q, %q, %d; want unknown", kind, host, port)
		}
		if _, version := tl.MCPSession(); version == "" {
			t.Error("MCPSession: no protocol version")
		}
	})
}

// TestErrorType: error.type follows the MCP conventions: the JSON-RPC
// code of a JSON-RPC error, tool_error for an isError result.
func TestErrorType(t *testing.T) {
	t.Parallel()
	wire := mcp.NewError("s", "call", "", mcp.ErrProtocol, fmt.Errorf("calling: %w", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad"}))
	tests := []struct {
		name     string
		err      interface{ ErrorType() string }
		want     string
		wantCode int64
	}{
		{"json-rpc error", wire, "-32602", jsonrpc.CodeInvalidParams},
		{"malformed result", mcp.NewError("s", "call", "", mcp.ErrProtocol, errors.New("unmarshal")), "mcp_protocol", 0},
		{"timeout", mcp.NewError("s", "call", "", mcp.ErrTimeout, nil), "mcp_timeout", 0},
		{"cancelled", mcp.NewError("s", "call", "", context.Canceled, &jsonrpc.Error{Code: 1}), "", 1},
		{"isError", &mcp.ToolError{Server: "s", Tool: "t", Output: "no"}, "tool_error", 0},
	}
	for _, tt := range tests {
		if got := tt.err.ErrorType(); got != tt.want {
			t.Errorf("%s: ErrorType = %q, want %q", tt.name, got, tt.want)
		}
		if e, ok := tt.err.(*mcp.Error); ok {
			code, ok := e.JSONRPCCode()
			if ok != (tt.wantCode != 0) || code != tt.wantCode {
				t.Errorf("%s: JSONRPCCode = %d, %v; want %d", tt.name, code, ok, tt.wantCode)
			}
		}
	}
}
