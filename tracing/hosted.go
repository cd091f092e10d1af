package tracing

import (
	"encoding/json"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tracing/internal/genaiconv"
)

// hostedCalls adds a turnkit.hosted_call event to the model call's span
// for each hosted call of the response (a web search, a file search, a
// code interpreter run, an MCP call …: the API ran them within the call),
// with its type, ID and status, and the MCP server's label and tool name
// where it has them. Opaque items get the event too, with their type.
func hostedCalls(span trace.Span, items []state.Item) {
	for _, it := range items {
		if it.Kind() != state.KindHostedCall && it.Kind() != state.KindOpaque {
			continue
		}
		attrs := make([]attribute.KeyValue, 0, 5)
		attrs = append(attrs, genaiconv.HostedTypeKey.String(it.Name()))
		if it.CallID() != "" {
			attrs = append(attrs, genaiconv.ToolCallIDKey.String(it.CallID()))
		}
		if it.Text() != "" {
			attrs = append(attrs, genaiconv.HostedStatusKey.String(it.Text()))
		}
		if server, tool := mcpNames(it); server != "" {
			attrs = append(attrs, genaiconv.HostedServerKey.String(server))
			if tool != "" {
				attrs = append(attrs, genaiconv.ToolNameKey.String(tool))
			}
		}
		span.AddEvent(genaiconv.EventHostedCall, trace.WithAttributes(attrs...))
	}
}

// mcpNames returns the server label and tool name of an MCP item.
func mcpNames(it state.Item) (server, tool string) {
	switch it.Name() {
	case "mcp_call", "mcp_list_tools", "mcp_approval_request":
	default:
		return "", ""
	}
	var v struct {
		ServerLabel string `json:"server_label"`
		Name        string `json:"name"`
	}
	_ = json.Unmarshal(it.AppendRaw(nil), &v)
	return v.ServerLabel, v.Name
}
