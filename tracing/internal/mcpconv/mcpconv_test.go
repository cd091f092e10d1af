package mcpconv_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/turnkit/turnkit/tracing/internal/mcpconv"
)

// TestMatchesSemconv pins every key and value to the one semconv v1.41.0
// defines, the last version that had the MCP keys.
func TestMatchesSemconv(t *testing.T) {
	t.Parallel()
	keys := []struct {
		name string
		give attribute.Key
		want attribute.Key
	}{
		{"method name", mcpconv.MethodNameKey, semconv.McpMethodNameKey},
		{"protocol version", mcpconv.ProtocolVersionKey, semconv.McpProtocolVersionKey},
		{"session id", mcpconv.SessionIDKey, semconv.McpSessionIDKey},
		{"network transport", mcpconv.NetworkTransportKey, semconv.NetworkTransportKey},
		{"network protocol name", mcpconv.NetworkProtocolNameKey, semconv.NetworkProtocolNameKey},
		{"server address", mcpconv.ServerAddressKey, semconv.ServerAddressKey},
		{"server port", mcpconv.ServerPortKey, semconv.ServerPortKey},
		{"rpc response status code", mcpconv.RPCResponseStatusCodeKey, semconv.RPCResponseStatusCodeKey},
	}
	for _, tt := range keys {
		if tt.give != tt.want {
			t.Errorf("%s: key = %q, semconv v1.41.0 has %q", tt.name, tt.give, tt.want)
		}
	}
	got := []attribute.KeyValue{mcpconv.MethodNameToolsCall, mcpconv.NetworkTransportPipe, mcpconv.NetworkTransportTCP}
	want := []attribute.KeyValue{semconv.McpMethodNameToolsCall, semconv.NetworkTransportPipe, semconv.NetworkTransportTCP}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b attribute.Value) bool { return a.String() == b.String() })); diff != "" {
		t.Errorf("values differ from semconv v1.41.0 (-want +got):\n%s", diff)
	}
	if mcpconv.NetworkProtocolHTTP.Value.AsString() != "http" {
		t.Errorf("network.protocol.name = %q, want http (lowercase, as the conventions ask)", mcpconv.NetworkProtocolHTTP.Value.AsString())
	}
}
