package mcp_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/tool/mcp"
	"github.com/turnkit/turnkit/tracing"
)

// The spans tracing records for MCP tools' calls. They are tool/mcp's
// tests rather than tracing's, so that a module importing tracing does not
// get the MCP SDK in its go.sum through tracing's tests.

var _ tracing.MCPTool = (*mcp.Tool)(nil)

// spanServer is an in-process go-sdk server with three tools: "lookup"
// answers, "broken" returns an isError result and "strict" answers with
// a JSON-RPC error (invalid params).
func spanServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "files", Version: "v0"}, nil)
	obj := json.RawMessage(`{"type":"object","properties":{}}`)
	s.AddTool(&sdk.Tool{Name: "lookup", Description: "Looks up.", InputSchema: obj}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "found"}}}, nil
	})
	s.AddTool(&sdk.Tool{Name: "broken", InputSchema: obj}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "disk on fire"}}}, nil
	})
	s.AddTool(&sdk.Tool{Name: "strict", InputSchema: obj}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no such file"}
	})
	return s
}

// spanInMemory serves spanServer over the go-sdk's in-memory transport.
func spanInMemory(t *testing.T) mcp.Server {
	t.Helper()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := spanServer().Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = ss.Close()
		_ = ss.Wait()
	})
	return mcp.Server{Name: "files", Transport: ct}
}

// spanHTTP serves spanServer over streamable HTTP on a loopback port.
func spanHTTP(t *testing.T) (srv mcp.Server, port int) {
	t.Helper()
	s := spanServer()
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(hs.Close)
	port = hs.Listener.Addr().(*net.TCPAddr).Port
	return mcp.Server{Name: "files", HTTP: &mcp.HTTP{URL: hs.URL + "/mcp", Client: hs.Client()}}, port
}

// runSpans runs an agent that calls the three MCP tools and a function tool
// and returns the execute_tool spans by tool name.
func runSpans(t *testing.T, h *spanHarness, srv mcp.Server) (map[string]trace.SpanKind, map[string]map[string]string, *mcp.Toolset) {
	t.Helper()
	ts, err := mcp.Connect(context.Background(), []mcp.Server{srv})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { _ = ts.Close() })
	a := &pipeline.Agent{
		Name:  "helper",
		Model: scripted.New(scripted.Respond(scripted.Call("lookup", `{}`), scripted.Call("broken", `{}`), scripted.Call("strict", `{}`), scripted.Call("echo", `{}`)), scripted.Reply("done")),
		Tools: append(ts.Tools(), echoSpanTool()),
	}
	r := pipeline.NewRunner(pipeline.WithMiddleware(h.middleware()))
	if _, err := r.Run(context.Background(), a, pipeline.UserInput("hi")); err != nil {
		t.Fatalf("Run: %v", err)
	}
	kinds := map[string]trace.SpanKind{}
	got := map[string]map[string]string{}
	for _, name := range []string{"lookup", "broken", "strict", "echo"} {
		s := oneSpan(t, h.spans.Ended(), "execute_tool "+name)
		kinds[name] = s.SpanKind()
		got[name] = spanAttrs(s.Attributes())
		if wantErr := name == "broken" || name == "strict"; wantErr != (s.Status().Code == codes.Error) {
			t.Errorf("%s: status %v, want Error: %v", name, s.Status().Code, wantErr)
		}
	}
	return kinds, got, ts
}

// TestMCPToolSpans: the execute_tool span of an MCP tool's call is a
// client span with the MCP conventions' attributes; error.type is
// tool_error for an isError result and the JSON-RPC code for a JSON-RPC
// error. A function tool's span is unchanged.
func TestMCPToolSpans(t *testing.T) {
	t.Parallel()
	h := newSpanHarness(t)
	kinds, got, ts := runSpans(t, h, spanInMemory(t))
	_, version := ts.Tools()[0].(*mcp.Tool).MCPSession()
	if version == "" {
		t.Fatal("no protocol version negotiated")
	}
	common := map[string]string{
		"mcp.method.name":       "tools/call",
		"mcp.protocol.version":  version,
		"turnkit.mcp.server":    "files",
		"gen_ai.operation.name": "execute_tool",
	}
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range common {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	want := map[string]map[string]string{
		"lookup": with(map[string]string{"gen_ai.tool.name": "lookup"}),
		"broken": with(map[string]string{"gen_ai.tool.name": "broken", "error.type": "tool_error"}),
		"strict": with(map[string]string{"gen_ai.tool.name": "strict", "error.type": "-32602", "rpc.response.status_code": "-32602"}),
	}
	keys := []string{"mcp.method.name", "mcp.protocol.version", "turnkit.mcp.server", "gen_ai.operation.name", "gen_ai.tool.name",
		"error.type", "rpc.response.status_code", "mcp.session.id", "network.transport", "server.address", "server.port"}
	pick := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for _, k := range keys {
			if v, ok := m[k]; ok {
				out[k] = v
			}
		}
		return out
	}
	for name, w := range want {
		if diff := cmp.Diff(w, pick(got[name])); diff != "" {
			t.Errorf("%s: attributes (-want +got):\n%s", name, diff)
		}
		if kinds[name] != trace.SpanKindClient {
			t.Errorf("%s: span kind %v, want client", name, kinds[name])
		}
	}
	if kinds["echo"] != trace.SpanKindInternal {
		t.Errorf("function tool: span kind %v, want internal", kinds["echo"])
	}
	for k := range got["echo"] {
		if k == "mcp.method.name" || k == "turnkit.mcp.server" {
			t.Errorf("function tool's span has %s", k)
		}
	}
}

// TestMCPToolSpansHTTP: over streamable HTTP the span also names the
// session, the transport and the server's address and port.
func TestMCPToolSpansHTTP(t *testing.T) {
	t.Parallel()
	h := newSpanHarness(t)
	srv, port := spanHTTP(t)
	_, got, ts := runSpans(t, h, srv)
	id, _ := ts.Tools()[0].(*mcp.Tool).MCPSession()
	if id == "" {
		t.Fatal("no session ID over streamable HTTP")
	}
	want := map[string]string{
		"mcp.session.id":        id,
		"network.transport":     "tcp",
		"network.protocol.name": "http",
		"server.address":        "127.0.0.1",
		"server.port":           strconv.Itoa(port),
	}
	for _, name := range []string{"lookup", "broken", "strict"} {
		if diff := cmp.Diff(want, attrSubset(got[name], want)); diff != "" {
			t.Errorf("%s: attributes (-want +got):\n%s", name, diff)
		}
	}
}

// TestMCPToolSpanPending: a call held for approval sent no tools/call, so
// its span has no MCP attributes.
func TestMCPToolSpanPending(t *testing.T) {
	t.Parallel()
	h := newSpanHarness(t)
	ts, err := mcp.Connect(context.Background(), []mcp.Server{spanInMemory(t)})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { _ = ts.Close() })
	a := &pipeline.Agent{Name: "helper", Model: scripted.New(scripted.CallTool("lookup", `{}`), scripted.Reply("done")), Tools: ts.Tools()}
	r := pipeline.NewRunner(pipeline.WithMiddleware(h.middleware(), approval.Require(approval.ByTool("lookup"))))
	res, err := r.Run(context.Background(), a, pipeline.UserInput("hi"))
	if err != nil || !res.Interrupted() {
		t.Fatalf("Run = %v, %v; want an interruption", res, err)
	}
	got := spanAttrs(oneSpan(t, h.spans.Ended(), "execute_tool lookup").Attributes())
	if got["turnkit.tool.status"] != "pending" {
		t.Fatalf("status = %q, want pending", got["turnkit.tool.status"])
	}
	if v, ok := got["mcp.method.name"]; ok {
		t.Errorf("a pending call's span has mcp.method.name = %q", v)
	}
}

// spanHarness records the spans of the tracing middleware it makes.
type spanHarness struct {
	spans *tracetest.SpanRecorder
	tp    *sdktrace.TracerProvider
}

func newSpanHarness(t testing.TB) *spanHarness {
	t.Helper()
	h := &spanHarness{spans: tracetest.NewSpanRecorder()}
	h.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(h.spans))
	t.Cleanup(func() { _ = h.tp.Shutdown(context.Background()) })
	return h
}

func (h *spanHarness) middleware() pipeline.Middleware {
	return tracing.Middleware(tracing.WithTracerProvider(h.tp))
}

// oneSpan returns the one ended span named name.
func oneSpan(t testing.TB, spans []sdktrace.ReadOnlySpan, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var got []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			got = append(got, s)
		}
	}
	if len(got) != 1 {
		t.Fatalf("%d spans named %q, want 1", len(got), name)
	}
	return got[0]
}

// spanAttrs returns a span's attributes as a map of emitted values.
func spanAttrs(kvs []attribute.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		out[string(kv.Key)] = kv.Value.String()
	}
	return out
}

// attrSubset returns the entries of got whose keys are in want, for
// cmp.Diff against want.
func attrSubset(got, want map[string]string) map[string]string {
	out := map[string]string{}
	for k := range want {
		if v, ok := got[k]; ok {
			out[k] = v
		}
	}
	return out
}

// echoSpanTool is a function tool, whose span has no MCP attributes.
func echoSpanTool() pipeline.Tool {
	return pipeline.NewTool(pipeline.ToolSpec{Name: "echo", Description: "echoes its arguments"},
		func(_ context.Context, args json.RawMessage) (string, error) { return "echo:" + string(args), nil })
}
