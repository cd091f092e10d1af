package tracing

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tracing/internal/genaiconv"
)

// middleware holds only what is fixed at construction; one value serves
// every run of a Runner at once.
type middleware struct {
	cfg    *config
	tracer trace.Tracer
	inst   instruments

	internal []trace.SpanStartOption // span start options without allocation per call
	client   []trace.SpanStartOption
}

// Middleware returns the OpenTelemetry middleware: a span per run
// (invoke_agent {agent}), per turn (turn), per model call (chat {model}),
// per tool call (execute_tool {tool}) and per handoff (handoff {agent}),
// with the GenAI semantic-convention attributes; guardrail verdicts and
// approval decisions as span events; and the GenAI client metrics plus tool,
// guardrail and approval counts. Put it first in the chain, so its spans
// enclose everything the other middleware do.
//
// Attributes and events are built only when a span is recording, and metric
// attributes only when the instrument is enabled, so with no provider set it
// costs next to nothing. Errors are recorded on the span of every stage
// they pass through, with status Error and error.type.
//
// A run's span context is saved in the run's state (state.Run.SetTraceContext)
// so that a checkpoint carries it; a resumed run links to it, or continues
// its trace with [WithContinueTrace].
func Middleware(opts ...Option) pipeline.Middleware {
	cfg := newConfig(opts)
	m := &middleware{
		cfg: cfg,
		tracer: cfg.tracerProvider.Tracer(ScopeName,
			trace.WithInstrumentationVersion(Version), trace.WithSchemaURL(genaiconv.SchemaURL)),
		internal: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)},
		client:   []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)},
	}
	m.inst = newInstruments(cfg.meterProvider.Meter(ScopeName,
		metric.WithInstrumentationVersion(Version), metric.WithSchemaURL(genaiconv.SchemaURL)))
	return pipeline.Middleware{Name: "tracing", Run: m.wrapRun, Turn: m.wrapTurn, Model: m.wrapModel, Tool: m.wrapTool}
}

// offKey marks a context in which no tracer records: the run's span has
// no span context at all (a no-op or unset provider and no incoming trace).
// The stages under such a run skip their spans, so tracing without a
// provider costs one context value per run and nothing per turn.
type offKey struct{}

// disabled reports whether the run ctx belongs to has no tracer.
func disabled(ctx context.Context) bool { return ctx.Value(offKey{}) != nil }

// noSpan is the span of a stage that is not traced. It is immutable.
var noSpan = trace.SpanFromContext(context.Background())

// start starts a stage's span with a fixed name; a recording span is then
// renamed with its model, tool or agent (so those names are built only for
// spans that record; a sampler sees the fixed name). Under a run without a
// tracer it returns ctx and noSpan.
func (m *middleware) start(ctx context.Context, name string, opts []trace.SpanStartOption) (context.Context, trace.Span) {
	if disabled(ctx) {
		return ctx, noSpan
	}
	return m.tracer.Start(ctx, name, opts...)
}

func (m *middleware) wrapRun(next pipeline.RunHandler) pipeline.RunHandler {
	return pipeline.RunHandlerFunc(func(ctx context.Context, c *pipeline.RunCall) (*pipeline.Result, error) {
		opts := m.internal
		if c.Resumed {
			ctx, opts = m.resumeFrom(ctx, c.Run)
		}
		sctx, span := m.tracer.Start(ctx, "invoke_agent", opts...)
		defer span.End()
		if !span.IsRecording() {
			if span.SpanContext().IsValid() {
				m.saveTraceContext(sctx, c.Run)
				ctx = sctx
			} else {
				ctx = context.WithValue(ctx, offKey{}, true)
			}
			return next.ServeRun(ctx, c) // a span that does not record has no error to record
		}
		ctx = sctx
		span.SetName("invoke_agent " + c.Agent.Name)
		m.saveTraceContext(ctx, c.Run)
		before := c.Run.Usage()
		span.SetAttributes(m.runAttributes(ctx, c)...)
		ctx = withConversation(ctx, c.Run)
		res, err := next.ServeRun(ctx, c)
		span.SetAttributes(runOutcome(c.Run, res, err, before)...)
		if err != nil {
			recordError(span, err)
		}
		return res, err
	})
}

func (m *middleware) wrapTurn(next pipeline.Handler) pipeline.Handler {
	return pipeline.HandlerFunc(func(ctx context.Context, t *pipeline.Turn) error {
		if disabled(ctx) && !m.inst.guardTrips.Enabled(ctx) {
			return next.ServeTurn(ctx, t) // no span, no metric: nothing to observe
		}
		ctx, span := m.start(ctx, "turn", m.internal)
		defer span.End()
		recording := span.IsRecording()
		observe := recording || m.inst.guardTrips.Enabled(ctx)
		var g0 int
		if observe {
			g0 = t.Run.GuardrailCount()
		}
		err := next.ServeTurn(ctx, t)
		if recording {
			span.SetAttributes(turnAttributes(t)...)
		}
		if observe {
			m.guardrails(ctx, span, t.Run.GuardrailResultsSince(g0), "")
		}
		if err != nil {
			recordError(span, err)
			return err
		}
		if t.Next.Kind == pipeline.NextHandoff {
			m.handoff(ctx, t)
		}
		return nil
	})
}

func (m *middleware) wrapModel(next pipeline.Model) pipeline.Model {
	return pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
		if disabled(ctx) && !m.inst.opDuration.Enabled(ctx) && !m.inst.tokenUsage.Enabled(ctx) {
			return next.Respond(ctx, c)
		}
		// The span and the metrics are of the model call itself, made
		// when a stage inside this one passes the call on to the model:
		// a blocking input guardrail that trips refuses it, and then
		// nothing is recorded of a call that never happened.
		c.Observe(func(ctx context.Context) (context.Context, func(*pipeline.ModelResponse, error)) {
			return m.observeModel(ctx, c)
		})
		return next.Respond(ctx, c)
	})
}

// observeModel starts the chat span of model call c as the model is
// called and returns the func that ends it once the model returned.
func (m *middleware) observeModel(ctx context.Context, c *pipeline.ModelCall) (context.Context, func(*pipeline.ModelResponse, error)) {
	measure := m.inst.opDuration.Enabled(ctx) || m.inst.tokenUsage.Enabled(ctx)
	var start time.Time
	if measure {
		start = time.Now()
	}
	ctx, span := m.start(ctx, "chat", m.client)
	recording := span.IsRecording()
	if recording {
		if c.Settings.Model != "" {
			span.SetName("chat " + c.Settings.Model)
		}
		span.SetAttributes(m.requestAttributes(ctx, c)...)
		if m.cfg.content {
			span.SetAttributes(requestContent(c)...)
		}
	}
	return ctx, func(resp *pipeline.ModelResponse, err error) {
		defer span.End()
		if recording && resp != nil {
			span.SetAttributes(responseAttributes(resp)...)
			hostedCalls(span, resp.Items)
			if m.cfg.content {
				span.SetAttributes(attribute.String(string(genaiconv.OutputMessagesKey), messagesJSON(state.ItemsOf(resp.Items))))
			}
		}
		if err != nil {
			recordError(span, err)
		}
		if measure {
			m.recordModelMetrics(ctx, c, resp, err, time.Since(start))
		}
	}
}

func (m *middleware) wrapTool(next pipeline.ToolHandler) pipeline.ToolHandler {
	return pipeline.ToolHandlerFunc(func(ctx context.Context, c *pipeline.ToolCall) (*pipeline.ToolResult, error) {
		measure := m.inst.toolCalls.Enabled(ctx) || m.inst.toolDuration.Enabled(ctx)
		if !measure && disabled(ctx) && !m.inst.guardTrips.Enabled(ctx) && !m.inst.approvals.Enabled(ctx) {
			return next.CallTool(ctx, c) // no span, no metric: nothing to observe
		}
		var start time.Time
		if measure {
			start = time.Now()
		}
		kind := m.internal
		mt, isMCP := c.Tool.(MCPTool)
		if isMCP {
			kind = m.client // the MCP conventions' client span
		}
		ctx, span := m.start(ctx, "execute_tool", kind)
		defer span.End()
		recording := span.IsRecording()
		if recording {
			span.SetName("execute_tool " + c.Name)
		}
		observe := recording || m.inst.guardTrips.Enabled(ctx) || m.inst.approvals.Enabled(ctx)
		var g0 int
		if observe {
			g0 = c.Turn.Run.GuardrailCount()
		}
		res, err := next.CallTool(ctx, c)
		if recording {
			span.SetAttributes(m.toolAttributes(c, res)...)
			if isMCP && (err != nil || res == nil || res.Status == pipeline.ToolCompleted) {
				// A call that is pending or was rejected sent no request.
				failure := err
				if failure == nil && res != nil {
					failure = res.Err
				}
				span.SetAttributes(mcpAttributes(mt, failure)...)
			}
		}
		if observe {
			m.guardrails(ctx, span, c.Turn.Run.GuardrailResultsSince(g0), c.CallID)
			m.approval(ctx, span, c, res)
		}
		switch {
		case err != nil:
			recordError(span, err)
		case res != nil && res.Err != nil:
			recordError(span, res.Err)
		}
		if measure {
			m.recordToolMetrics(ctx, c, res, err, time.Since(start))
		}
		return res, err
	})
}

// handoff records a handoff as a short span under the turn's span.
func (m *middleware) handoff(ctx context.Context, t *pipeline.Turn) {
	to := ""
	if t.Next.Agent != nil {
		to = t.Next.Agent.Name
	}
	_, span := m.start(ctx, "handoff", m.internal)
	if span.IsRecording() {
		span.SetName("handoff " + to)
		attrs := []attribute.KeyValue{
			genaiconv.HandoffFromKey.String(t.Agent.Name),
			genaiconv.HandoffToKey.String(to),
			genaiconv.AgentNameKey.String(t.Agent.Name),
		}
		if t.Response != nil {
			for _, it := range t.Response.Items {
				if it.Kind() == state.KindHandoffCall {
					attrs = append(attrs, genaiconv.ToolNameKey.String(it.Name()), genaiconv.ToolCallIDKey.String(it.CallID()))
					break
				}
			}
		}
		span.SetAttributes(attrs...)
	}
	span.End()
}

// recordError marks span as failed with err.
func recordError(span trace.Span, err error) {
	if !span.IsRecording() {
		return
	}
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
	span.SetAttributes(genaiconv.ErrorTypeKey.String(errorType(err)))
}

// handleErr reports an error of the instrumentation itself to otel's
// error handler, as the otel contrib instrumentations do.
func handleErr(err error) {
	if err != nil {
		otel.Handle(err)
	}
}
