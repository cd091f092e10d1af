package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

func TestRunPrintsSpans(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OPENAI_API_KEY", "")
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v", err)
	}
	text := out.String()
	if !strings.Contains(text, "final output: It is 18°C and clear in Oslo.") {
		t.Fatalf("output lacks the final output:\n%s", text)
	}
	// The final output comes first; the spans follow when the provider
	// shuts down and flushes, one JSON object each.
	_, spans, _ := strings.Cut(text, "final output: It is 18°C and clear in Oslo.\n")
	var names []string
	dec := json.NewDecoder(strings.NewReader(spans))
	for dec.More() {
		var span struct{ Name string }
		if err := dec.Decode(&span); err != nil {
			t.Fatalf("decode span: %v\n%s", err, text)
		}
		names = append(names, span.Name)
	}
	sort.Strings(names)
	want := []string{"chat gpt-5-mini", "chat gpt-5-mini", "execute_tool get_weather", "invoke_agent weather", "turn", "turn"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("span names mismatch (-want +got):\n%s", diff)
	}
}

// otlpReceiver is an OTLP/HTTP trace endpoint that keeps what it receives.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
	errs  []string
}

func (rc *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fail := func(code int, msg string) {
		rc.mu.Lock()
		rc.errs = append(rc.errs, msg)
		rc.mu.Unlock()
		http.Error(w, msg, code)
	}
	if r.URL.Path != "/v1/traces" || r.Method != http.MethodPost {
		fail(http.StatusNotFound, r.Method+" "+r.URL.Path)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		fail(http.StatusUnsupportedMediaType, "content type "+ct)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		fail(http.StatusBadRequest, err.Error())
		return
	}
	var req collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		fail(http.StatusBadRequest, "decode: "+err.Error())
		return
	}
	rc.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			rc.spans = append(rc.spans, ss.Spans...)
		}
	}
	rc.mu.Unlock()
	resp, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(resp)
}

func TestRunExportsOTLP(t *testing.T) {
	rc := &otlpReceiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OPENAI_API_KEY", "")

	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v", err)
	}
	if got := out.String(); got != "final output: It is 18°C and clear in Oslo.\n" {
		t.Errorf("output = %q; with OTLP the spans go to the endpoint, not the writer", got)
	}

	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.errs) > 0 {
		t.Fatalf("the receiver refused requests: %v", rc.errs)
	}
	byID := map[string]*tracepb.Span{}
	var names []string
	for _, s := range rc.spans {
		byID[string(s.SpanId)] = s
		names = append(names, s.Name)
	}
	sort.Strings(names)
	want := []string{"chat gpt-5-mini", "chat gpt-5-mini", "execute_tool get_weather", "invoke_agent weather", "turn", "turn"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("exported span names mismatch (-want +got):\n%s", diff)
	}
	// The tree survives the wire: every span but the root has its parent
	// among the exported spans, and the tool call's parent is a turn whose
	// parent is the run.
	// The scripted model names calls by run: call_<run ID>_<turn>_<part>.
	var runID string
	for _, s := range rc.spans {
		if s.Name == "invoke_agent weather" {
			runID = stringAttrs(s.Attributes, map[string]string{"turnkit.run.id": ""})["turnkit.run.id"]
		}
	}
	for _, s := range rc.spans {
		if s.Name == "execute_tool get_weather" {
			turn := byID[string(s.ParentSpanId)]
			if turn == nil || turn.Name != "turn" || byID[string(turn.ParentSpanId)].GetName() != "invoke_agent weather" {
				t.Errorf("execute_tool's ancestry is not turn → invoke_agent")
			}
			wantAttrs := map[string]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather", "gen_ai.tool.call.id": "call_" + runID + "_1_1"}
			if diff := cmp.Diff(wantAttrs, stringAttrs(s.Attributes, wantAttrs)); diff != "" {
				t.Errorf("exported tool attributes mismatch (-want +got):\n%s", diff)
			}
		}
		if s.Name == "invoke_agent weather" {
			wantAttrs := map[string]string{"gen_ai.agent.name": "weather", "gen_ai.conversation.id": "example-session", "gen_ai.provider.name": "scripted"}
			if diff := cmp.Diff(wantAttrs, stringAttrs(s.Attributes, wantAttrs)); diff != "" {
				t.Errorf("exported run attributes mismatch (-want +got):\n%s", diff)
			}
		}
	}
}

func stringAttrs(kvs []*commonpb.KeyValue, want map[string]string) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		if _, ok := want[kv.Key]; ok {
			out[kv.Key] = kv.Value.GetStringValue()
		}
	}
	return out
}
