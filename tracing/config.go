package tracing

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the tracer and meter the
// middleware uses.
const ScopeName = "github.com/turnkit/turnkit/tracing"

// An Option configures [Middleware].
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// config is read-only once [Middleware] returned.
type config struct {
	tracerProvider trace.TracerProvider
	meterProvider  metric.MeterProvider
	propagator     propagation.TextMapPropagator
	content        bool
	continueTrace  bool
	provider       string
}

func newConfig(opts []Option) *config {
	c := &config{propagator: propagation.TraceContext{}}
	for _, o := range opts {
		if o != nil {
			o.apply(c)
		}
	}
	if c.tracerProvider == nil {
		c.tracerProvider = otel.GetTracerProvider()
	}
	if c.meterProvider == nil {
		c.meterProvider = otel.GetMeterProvider()
	}
	return c
}

// WithTracerProvider sets the provider of the middleware's tracer. A nil
// provider is ignored; without one the global provider is used
// (otel.GetTracerProvider at the time [Middleware] is called).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) {
		if tp != nil {
			c.tracerProvider = tp
		}
	})
}

// WithMeterProvider sets the provider of the middleware's meter. A nil
// provider is ignored; without one the global provider is used
// (otel.GetMeterProvider at the time [Middleware] is called).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) {
		if mp != nil {
			c.meterProvider = mp
		}
	})
}

// WithPropagator sets how the run span's context is written into a
// checkpoint and read back on resume (default: W3C trace context,
// propagation.TraceContext). A nil propagator is ignored.
func WithPropagator(p propagation.TextMapPropagator) Option {
	return optionFunc(func(c *config) {
		if p != nil {
			c.propagator = p
		}
	})
}

// WithContentCapture records message content, tool arguments and tool
// outputs on the spans (gen_ai.input.messages, gen_ai.output.messages,
// gen_ai.system_instructions, gen_ai.tool.call.arguments,
// gen_ai.tool.call.result). They may hold personal or secret data, so they
// are off by default.
func WithContentCapture() Option {
	return optionFunc(func(c *config) { c.content = true })
}

// WithContinueTrace makes a resumed run's span a child of the span the run
// paused in, so the whole run, pauses included, is one trace. By default a
// resumed run starts a span in the caller's trace (or a new one) that links
// to the span it paused in.
func WithContinueTrace() Option {
	return optionFunc(func(c *config) { c.continueTrace = true })
}

// WithProviderName sets gen_ai.provider.name (such as "openai") for models
// that do not report it through [ProviderNamer]. Empty leaves it unset.
func WithProviderName(name string) Option {
	return optionFunc(func(c *config) { c.provider = name })
}

// A ProviderNamer is a [pipeline.Model] that reports its GenAI provider
// name (gen_ai.provider.name), such as "openai". The middleware asks the
// agent's model; [WithProviderName] is the fallback.
type ProviderNamer interface {
	ProviderName() string
}
