package tracing

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/tracing/internal/genaiconv"
)

// instruments are the middleware's metrics. An instrument that could not be
// made is a no-op; the error goes to otel's error handler.
type instruments struct {
	opDuration   metric.Float64Histogram
	tokenUsage   metric.Int64Histogram
	toolCalls    metric.Int64Counter
	toolDuration metric.Float64Histogram
	guardTrips   metric.Int64Counter
	approvals    metric.Int64Counter
}

func newInstruments(meter metric.Meter) instruments {
	var (
		in  instruments
		err error
	)
	if in.opDuration, err = meter.Float64Histogram(genaiconv.ClientOperationDurationName,
		metric.WithUnit(genaiconv.ClientOperationDurationUnit),
		metric.WithDescription(genaiconv.ClientOperationDurationDesc),
		metric.WithExplicitBucketBoundaries(genaiconv.DurationBuckets()...)); err != nil {
		handleErr(err)
		in.opDuration = noop.Float64Histogram{}
	}
	if in.tokenUsage, err = meter.Int64Histogram(genaiconv.ClientTokenUsageName,
		metric.WithUnit(genaiconv.ClientTokenUsageUnit),
		metric.WithDescription(genaiconv.ClientTokenUsageDesc),
		metric.WithExplicitBucketBoundaries(genaiconv.TokenBuckets()...)); err != nil {
		handleErr(err)
		in.tokenUsage = noop.Int64Histogram{}
	}
	if in.toolCalls, err = meter.Int64Counter(genaiconv.ToolCallsName,
		metric.WithUnit("{call}"),
		metric.WithDescription("Tool calls by tool and status.")); err != nil {
		handleErr(err)
		in.toolCalls = noop.Int64Counter{}
	}
	if in.toolDuration, err = meter.Float64Histogram(genaiconv.ToolDurationName,
		metric.WithUnit("s"),
		metric.WithDescription("Duration of the tool stage of a call."),
		metric.WithExplicitBucketBoundaries(genaiconv.DurationBuckets()...)); err != nil {
		handleErr(err)
		in.toolDuration = noop.Float64Histogram{}
	}
	if in.guardTrips, err = meter.Int64Counter(genaiconv.GuardrailTripsName,
		metric.WithUnit("{trip}"),
		metric.WithDescription("Guardrail tripwires by guardrail and stage.")); err != nil {
		handleErr(err)
		in.guardTrips = noop.Int64Counter{}
	}
	if in.approvals, err = meter.Int64Counter(genaiconv.ApprovalsName,
		metric.WithUnit("{approval}"),
		metric.WithDescription("Approval requests and decisions by tool and outcome.")); err != nil {
		handleErr(err)
		in.approvals = noop.Int64Counter{}
	}
	return in
}

func (m *middleware) recordModelMetrics(ctx context.Context, c *pipeline.ModelCall, resp *pipeline.ModelResponse, err error, d time.Duration) {
	attrs := make([]attribute.KeyValue, 0, 5)
	attrs = append(attrs, genaiconv.OperationNameChat)
	if p := m.providerName(c.Agent); p != "" {
		attrs = append(attrs, genaiconv.ProviderNameKey.String(p))
	}
	if c.Settings.Model != "" {
		attrs = append(attrs, genaiconv.RequestModelKey.String(c.Settings.Model))
	}
	if resp != nil && resp.Model != "" {
		attrs = append(attrs, genaiconv.ResponseModelKey.String(resp.Model))
	}
	if err != nil {
		attrs = append(attrs, genaiconv.ErrorTypeKey.String(errorType(err)))
	}
	if m.inst.opDuration.Enabled(ctx) {
		m.inst.opDuration.Record(ctx, d.Seconds(), metric.WithAttributes(attrs...))
	}
	if resp == nil || !m.inst.tokenUsage.Enabled(ctx) {
		return
	}
	n := len(attrs)
	m.inst.tokenUsage.Record(ctx, resp.Usage.InputTokens, metric.WithAttributes(append(attrs[:n:n], genaiconv.TokenTypeInput)...))
	m.inst.tokenUsage.Record(ctx, resp.Usage.OutputTokens, metric.WithAttributes(append(attrs[:n:n], genaiconv.TokenTypeOutput)...))
}

func (m *middleware) recordToolMetrics(ctx context.Context, c *pipeline.ToolCall, res *pipeline.ToolResult, err error, d time.Duration) {
	status := "error"
	if err == nil && res != nil {
		status = res.Status.String()
	}
	attrs := make([]attribute.KeyValue, 0, 3)
	attrs = append(attrs, genaiconv.ToolNameKey.String(c.Name), genaiconv.ToolStatusKey.String(status))
	switch {
	case err != nil:
		attrs = append(attrs, genaiconv.ErrorTypeKey.String(errorType(err)))
	case res != nil && res.Err != nil:
		attrs = append(attrs, genaiconv.ErrorTypeKey.String(errorType(res.Err)))
	}
	set := metric.WithAttributes(attrs...)
	if m.inst.toolCalls.Enabled(ctx) {
		m.inst.toolCalls.Add(ctx, 1, set)
	}
	if m.inst.toolDuration.Enabled(ctx) {
		m.inst.toolDuration.Record(ctx, d.Seconds(), set)
	}
}
