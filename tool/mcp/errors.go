package mcp

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Errors that an [*Error] wraps, and the ones build-time errors wrap; match
// them with errors.Is.
var (
	// ErrTransport means the server could not be reached or the connection
	// to it failed or closed.
	ErrTransport = errors.New("mcp: transport failure")
	// ErrServerExited means a stdio server's process exited.
	ErrServerExited = errors.New("mcp: server process exited")
	// ErrTimeout means the server did not answer within Server.Timeout (a
	// call) or Server.ConnectTimeout (connect and initialize).
	ErrTimeout = errors.New("mcp: timeout")
	// ErrProtocol means the server answered with a JSON-RPC error or with
	// a result that is not what the protocol says.
	ErrProtocol = errors.New("mcp: protocol error")
	// ErrToolFailed means the tool ran and reported an error (isError). It
	// is wrapped by [*ToolError].
	ErrToolFailed = errors.New("mcp: tool reported an error")
	// ErrDuplicateTool means two tools would have the same name. It is
	// wrapped by [*DuplicateToolError].
	ErrDuplicateTool = errors.New("mcp: duplicate tool name")
	// ErrInvalidServer means a [Server] is configured wrongly. It is wrapped
	// by [*ConfigError].
	ErrInvalidServer = errors.New("mcp: invalid server")
	// ErrUnknownServer means a server name is not one of the toolset's.
	ErrUnknownServer = errors.New("no MCP server named")
)

// An Error reports a failure to talk to a server: Op is what was being
// done ("connect", "list tools", "call"), Tool the MCP name of the tool
// called, if any, and Err the cause. What kind of failure it is, match
// with errors.Is: it wraps one of [ErrTransport], [ErrServerExited],
// [ErrTimeout] or [ErrProtocol], or the context's error
// ([context.Canceled], [context.DeadlineExceeded]) when the caller's
// context ended, and it wraps Err. Only this package makes an Error.
type Error struct {
	Server string
	Op     string
	Tool   string
	Err    error

	kind error // one of the sentinels above, or the caller's context error
}

// Error names the server, the operation, the tool (if any), the kind of
// failure and the cause.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mcp: server %q: %s", e.Server, e.Op)
	if e.Tool != "" {
		fmt.Fprintf(&b, " %q", e.Tool)
	}
	b.WriteString(": ")
	b.WriteString(strings.TrimPrefix(e.kindOf().Error(), "mcp: "))
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the kind of failure (see [Error]) and the cause.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.kindOf()}
	}
	return []error{e.kindOf(), e.Err}
}

// kindOf returns the kind of failure; an Error made outside this package
// has none and counts as a transport failure.
func (e *Error) kindOf() error {
	if e.kind == nil {
		return ErrTransport
	}
	return e.kind
}

// ErrorType names the failure for tracing's error.type: the JSON-RPC
// error code when the server answered with one (such as "-32602"), as the
// MCP semantic conventions ask; else "mcp_transport", "mcp_server_exited",
// "mcp_timeout" or "mcp_protocol"; "" when the call's context ended.
func (e *Error) ErrorType() string {
	switch e.kindOf() {
	case context.Canceled, context.DeadlineExceeded:
		return ""
	}
	if code, ok := e.JSONRPCCode(); ok {
		return strconv.FormatInt(code, 10)
	}
	switch e.kindOf() {
	case ErrServerExited:
		return "mcp_server_exited"
	case ErrTimeout:
		return "mcp_timeout"
	case ErrProtocol:
		return "mcp_protocol"
	}
	return "mcp_transport"
}

// JSONRPCCode returns the code of the JSON-RPC error the server answered
// with, if it did. Tracing records it as rpc.response.status_code.
func (e *Error) JSONRPCCode() (code int64, ok bool) {
	var w *jsonrpc.Error
	if errors.As(e.Err, &w) {
		return w.Code, true
	}
	return 0, false
}

// A ToolError reports a call whose result had isError set: the tool ran
// and failed. Output is the result rendered as the tool's output would
// be; the runner reports the error to the model by default. It wraps
// [ErrToolFailed].
type ToolError struct {
	Server string
	Tool   string
	Output string
}

// Error names the server and the tool, with the result rendered as output.
func (e *ToolError) Error() string {
	return fmt.Sprintf("mcp: server %q tool %q: %s", e.Server, e.Tool, e.Output)
}

// Unwrap returns [ErrToolFailed].
func (e *ToolError) Unwrap() error { return ErrToolFailed }

// ErrorType returns "tool_error", the error.type the MCP semantic
// conventions give a result with isError set.
func (e *ToolError) ErrorType() string { return "tool_error" }

// A DuplicateToolError reports two tools that would reach the model under
// one name. It wraps [ErrDuplicateTool].
type DuplicateToolError struct {
	// Name is the name the model would see.
	Name string
	// Servers and Tools are the two servers and their tools' MCP names.
	Servers [2]string
	Tools   [2]string
}

// Error names the tool and the servers that both offer it.
func (e *DuplicateToolError) Error() string {
	return fmt.Sprintf("mcp: tool name %q is offered by server %q (tool %q) and server %q (tool %q); use WithServerPrefix or filter one out",
		e.Name, e.Servers[0], e.Tools[0], e.Servers[1], e.Tools[1])
}

// Unwrap returns [ErrDuplicateTool].
func (e *DuplicateToolError) Unwrap() error { return ErrDuplicateTool }

// A ConfigError reports a [Server] that cannot be used as configured, or a
// tool whose name cannot be offered to the model. Index is the server's
// place in the list given to [Connect]. It wraps [ErrInvalidServer].
type ConfigError struct {
	Server string
	Index  int
	Reason string
}

// Error names the server and what is wrong with its configuration.
func (e *ConfigError) Error() string {
	return fmt.Sprintf("mcp: server %q (#%d): %s", e.Server, e.Index, e.Reason)
}

// Unwrap returns [ErrInvalidServer].
func (e *ConfigError) Unwrap() error { return ErrInvalidServer }
