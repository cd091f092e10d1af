// Package mcpconv holds the OpenTelemetry semantic-convention keys that
// turnkit's tracing puts on the spans of MCP (Model Context Protocol) tool
// calls. The MCP keys left go.opentelemetry.io/otel/semconv in v1.42.0, as
// the GenAI ones did (see package genaiconv), so they are kept here, copied
// from semconv v1.41.0 together with the network, server and RPC keys the
// MCP client span uses (a test checks every one against that version), and
// with turnkit's own key for the server's configured name.
package mcpconv

import "go.opentelemetry.io/otel/attribute"

// Attribute keys of the MCP client span (semantic conventions v1.41.0).
const (
	MethodNameKey            = attribute.Key("mcp.method.name")
	ProtocolVersionKey       = attribute.Key("mcp.protocol.version")
	SessionIDKey             = attribute.Key("mcp.session.id")
	NetworkTransportKey      = attribute.Key("network.transport")
	NetworkProtocolNameKey   = attribute.Key("network.protocol.name")
	ServerAddressKey         = attribute.Key("server.address")
	ServerPortKey            = attribute.Key("server.port")
	RPCResponseStatusCodeKey = attribute.Key("rpc.response.status_code")
)

// Well-known values (semantic conventions v1.41.0).
var (
	MethodNameToolsCall  = MethodNameKey.String("tools/call")
	NetworkTransportPipe = NetworkTransportKey.String("pipe")
	NetworkTransportTCP  = NetworkTransportKey.String("tcp")
	NetworkProtocolHTTP  = NetworkProtocolNameKey.String("http")
)

// ErrorTypeToolError is the error.type of a tools/call whose result has
// isError set, as the MCP conventions name it.
const ErrorTypeToolError = "tool_error"

// turnkit's own key: the name the MCP server was given in turnkit's
// configuration, which the conventions do not name (a stdio server has no
// address).
const ServerNameKey = attribute.Key("turnkit.mcp.server")
