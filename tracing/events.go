package tracing

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tracing/internal/genaiconv"
)

// guardrails reports the guardrail results a stage added as events on its
// span and counts the trips. The turn's span (callID "") takes the input and
// output guardrails; a tool call's span takes the tool guardrails of its
// call. A nested run's results (their Owner set), which the outer run's
// state records too, are left to the nested run's own spans: each result is
// reported and counted once.
func (m *middleware) guardrails(ctx context.Context, span trace.Span, results []state.GuardrailResult, callID string) {
	recording := span.IsRecording()
	for _, g := range results {
		if g.Owner != "" {
			continue // a nested run's, recorded by its own stages
		}
		toolStage := g.Stage == state.StageToolInput || g.Stage == state.StageToolOutput
		if callID == "" && toolStage || callID != "" && (!toolStage || g.CallID != callID) {
			continue
		}
		if recording {
			attrs := []attribute.KeyValue{
				genaiconv.GuardrailNameKey.String(g.Name),
				genaiconv.GuardrailStageKey.String(g.Stage.String()),
				genaiconv.GuardrailTrippedKey.Bool(g.Tripped),
			}
			if g.Behavior != "" {
				attrs = append(attrs, genaiconv.GuardrailBehavior.String(g.Behavior))
			}
			if g.CallID != "" {
				attrs = append(attrs, genaiconv.ToolCallIDKey.String(g.CallID))
			}
			if m.cfg.content && g.Message != "" {
				attrs = append(attrs, genaiconv.GuardrailMessageKey.String(g.Message))
			}
			span.AddEvent(genaiconv.EventGuardrail, trace.WithAttributes(attrs...))
		}
		if g.Tripped && m.inst.guardTrips.Enabled(ctx) {
			m.inst.guardTrips.Add(ctx, 1, metric.WithAttributes(
				genaiconv.GuardrailNameKey.String(g.Name),
				genaiconv.GuardrailStageKey.String(g.Stage.String()),
			))
		}
	}
}

// approval reports what the approval stage made of a call: a request when
// the call waits for a decision, and the decision the call ran (or was
// rejected) under, read from the run's state.
func (m *middleware) approval(ctx context.Context, span trace.Span, c *pipeline.ToolCall, res *pipeline.ToolResult) {
	if res == nil {
		return
	}
	recording := span.IsRecording()
	outcome := ""
	if res.Status == pipeline.ToolPending {
		outcome = "requested"
		if recording {
			span.AddEvent(genaiconv.EventApprovalRequest, trace.WithAttributes(
				genaiconv.ToolNameKey.String(c.Name),
				genaiconv.ToolCallIDKey.String(c.CallID),
			))
		}
	} else if d, exact, ok := c.Turn.Run.DecisionFor(c.Name, c.CallID); ok {
		outcome = d.Verdict.String()
		if recording {
			attrs := []attribute.KeyValue{
				genaiconv.ApprovalOutcomeKey.String(outcome),
				genaiconv.ToolNameKey.String(c.Name),
				genaiconv.ToolCallIDKey.String(c.CallID),
				genaiconv.ApprovalAlwaysKey.Bool(!exact && d.Always),
			}
			if m.cfg.content && d.Message != "" {
				attrs = append(attrs, genaiconv.ApprovalMessageKey.String(d.Message))
			}
			span.AddEvent(genaiconv.EventApprovalDecision, trace.WithAttributes(attrs...))
		}
	}
	if outcome != "" && m.inst.approvals.Enabled(ctx) {
		m.inst.approvals.Add(ctx, 1, metric.WithAttributes(
			genaiconv.ToolNameKey.String(c.Name),
			genaiconv.ApprovalOutcomeKey.String(outcome),
		))
	}
}

// saveTraceContext writes the context of the run's span into the run's
// state, so that a checkpoint carries it to whoever resumes the run.
func (m *middleware) saveTraceContext(ctx context.Context, run *state.Run) {
	carrier := propagation.MapCarrier{}
	m.cfg.propagator.Inject(ctx, carrier)
	if len(carrier) > 0 {
		run.SetTraceContext(carrier)
	}
}

// resumeFrom reads the span context a paused run saved. By default the new
// run span links to it; with WithContinueTrace it becomes the parent.
func (m *middleware) resumeFrom(ctx context.Context, run *state.Run) (context.Context, []trace.SpanStartOption) {
	carrier := run.TraceContext()
	if len(carrier) == 0 {
		return ctx, m.internal
	}
	sc := trace.SpanContextFromContext(m.cfg.propagator.Extract(context.Background(), propagation.MapCarrier(carrier)))
	if !sc.IsValid() {
		return ctx, m.internal
	}
	if m.cfg.continueTrace {
		return trace.ContextWithRemoteSpanContext(ctx, sc), m.internal
	}
	link := trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{genaiconv.LinkTypeKey.String("resumed_from")}}
	return ctx, []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal), trace.WithLinks(link)}
}
