package tracing

import (
	"errors"
	"strconv"

	"go.opentelemetry.io/otel/attribute"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/tracing/internal/mcpconv"
)

// An MCPTool is a tool that an MCP (Model Context Protocol) server serves,
// as the tools of package tool/mcp are. The execute_tool span of a call to
// one is a client span, and carries the MCP client span's attributes too,
// as the MCP semantic conventions ask of a GenAI instrumentation that
// traces the tool call itself: mcp.method.name (tools/call),
// mcp.session.id, mcp.protocol.version, network.transport (pipe for
// stdio, tcp for HTTP), network.protocol.name, server.address and
// server.port, rpc.response.status_code for a JSON-RPC error, and
// turnkit.mcp.server, the server's configured name.
//
// The methods are read after the call, so a session that a crashed server
// was restarted into during the call is the one recorded. A call that
// waits for approval or was rejected sent no request: its span has no MCP
// attributes.
type MCPTool interface {
	pipeline.Tool
	// Server returns the name the server was configured with.
	Server() string
	// MCPSession returns the session's ID ("" when the transport has
	// none) and the protocol version negotiated at initialize.
	MCPSession() (id, protocolVersion string)
	// MCPTransport says how the server is reached: kind "stdio", "http"
	// (with the host and port of its URL) or "" when unknown.
	MCPTransport() (kind, host string, port int)
}

// A jsonrpcCoder is an error that carries a JSON-RPC error code, as
// tool/mcp's *mcp.Error does when the server answered with one.
type jsonrpcCoder interface {
	error
	JSONRPCCode() (code int64, ok bool)
}

// mcpAttributes describes a call to an MCP tool that ended with err (nil
// if it succeeded).
func mcpAttributes(t MCPTool, err error) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 9)
	attrs = append(attrs, mcpconv.MethodNameToolsCall, mcpconv.ServerNameKey.String(t.Server()))
	id, version := t.MCPSession()
	if id != "" {
		attrs = append(attrs, mcpconv.SessionIDKey.String(id))
	}
	if version != "" {
		attrs = append(attrs, mcpconv.ProtocolVersionKey.String(version))
	}
	switch kind, host, port := t.MCPTransport(); kind {
	case "stdio":
		attrs = append(attrs, mcpconv.NetworkTransportPipe)
	case "http":
		attrs = append(attrs, mcpconv.NetworkTransportTCP, mcpconv.NetworkProtocolHTTP)
		if host != "" {
			attrs = append(attrs, mcpconv.ServerAddressKey.String(host))
			if port > 0 {
				attrs = append(attrs, mcpconv.ServerPortKey.Int(port))
			}
		}
	}
	if err != nil {
		if c, ok := errors.AsType[jsonrpcCoder](err); ok {
			if code, ok := c.JSONRPCCode(); ok {
				attrs = append(attrs, mcpconv.RPCResponseStatusCodeKey.String(strconv.FormatInt(code, 10)))
			}
		}
	}
	return attrs
}
