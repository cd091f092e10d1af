package tracing_test

import (
	"context"
	"encoding/json"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/guardrails"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tracing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// otelHarness is an SDK tracer provider with an in-memory span recorder and
// an SDK meter provider with a manual reader.
type otelHarness struct {
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
}

func newHarness(t testing.TB) *otelHarness {
	t.Helper()
	h := &otelHarness{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	h.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(h.spans))
	h.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader))
	t.Cleanup(func() {
		_ = h.tp.Shutdown(context.Background())
		_ = h.mp.Shutdown(context.Background())
	})
	return h
}

func (h *otelHarness) middleware(opts ...tracing.Option) pipeline.Middleware {
	return tracing.Middleware(append([]tracing.Option{tracing.WithTracerProvider(h.tp), tracing.WithMeterProvider(h.mp)}, opts...)...)
}

// ended returns the ended spans in the order they ended.
func (h *otelHarness) ended() []sdktrace.ReadOnlySpan { return h.spans.Ended() }

// metrics collects the metrics recorded so far, by instrument name.
func (h *otelHarness) metrics(t testing.TB) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := h.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("collect metrics: %v", err)
	}
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

// node is a span in a tree, for comparing shapes.
type node struct {
	Name     string
	Children []node
}

// tree returns the span tree under the root spans (those whose parent is
// not among spans), children in start order.
func tree(spans []sdktrace.ReadOnlySpan) []node {
	byParent := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
	ids := map[trace.SpanID]bool{}
	for _, s := range spans {
		ids[s.SpanContext().SpanID()] = true
	}
	var roots []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if p := s.Parent().SpanID(); ids[p] {
			byParent[p] = append(byParent[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	var build func([]sdktrace.ReadOnlySpan) []node
	build = func(ss []sdktrace.ReadOnlySpan) []node {
		sortByStart(ss)
		var out []node
		for _, s := range ss {
			out = append(out, node{Name: s.Name(), Children: build(byParent[s.SpanContext().SpanID()])})
		}
		return out
	}
	return build(roots)
}

func sortByStart(ss []sdktrace.ReadOnlySpan) {
	for i := 1; i < len(ss); i++ {
		for j := i; j > 0 && ss[j].StartTime().Before(ss[j-1].StartTime()); j-- {
			ss[j], ss[j-1] = ss[j-1], ss[j]
		}
	}
}

// find returns the spans with the given name.
func find(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func one(t testing.TB, spans []sdktrace.ReadOnlySpan, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	got := find(spans, name)
	if len(got) != 1 {
		t.Fatalf("%d spans named %q, want 1", len(got), name)
	}
	return got[0]
}

// attrs returns a span's (or event's) attributes as a map of emitted values.
func attrs(kvs []attribute.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		out[string(kv.Key)] = kv.Value.String()
	}
	return out
}

// subset returns the entries of got whose keys are in want, for cmp.Diff
// against want.
func subset(got, want map[string]string) map[string]string {
	out := map[string]string{}
	for k := range want {
		if v, ok := got[k]; ok {
			out[k] = v
		}
	}
	return out
}

func eventNames(s sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, e := range s.Events() {
		out = append(out, e.Name)
	}
	return out
}

func echoTool(name string) pipeline.Tool {
	return pipeline.NewTool(pipeline.ToolSpec{Name: name, Description: "echoes its arguments"},
		func(_ context.Context, args json.RawMessage) (string, error) { return "echo:" + string(args), nil })
}

// guard returns the real input and tool-input guardrails: the input check
// ("no_secrets") trips when trip is set; the tool check ("args_ok") passes.
func guard(trip bool) pipeline.Middleware {
	return pipeline.Chain(
		guardrails.Input(func(context.Context, *pipeline.Agent, []state.Item) (guardrails.Verdict, error) {
			if trip {
				return guardrails.Trip("a secret"), nil
			}
			return guardrails.Pass(nil), nil
		}, guardrails.WithName("no_secrets")),
		guardrails.ToolInput(func(context.Context, *pipeline.Agent, *pipeline.ToolCall) (guardrails.Verdict, error) {
			return guardrails.Pass(nil), nil
		}, guardrails.WithName("args_ok")),
	)
}

// requireApproval returns the real approval middleware for the named tools.
func requireApproval(names ...string) pipeline.Middleware {
	return approval.Require(approval.ByTool(names...))
}

// decide records a verdict on every pending call of run.
func decide(t testing.TB, run *state.Run, v state.Verdict) {
	t.Helper()
	for _, a := range run.Pending() {
		var err error
		if v == state.Approved {
			err = run.Approve(a.CallID)
		} else {
			err = run.Reject(a.CallID, "")
		}
		if err != nil {
			t.Fatalf("decide %s on %s: %v", v, a.CallID, err)
		}
	}
}
