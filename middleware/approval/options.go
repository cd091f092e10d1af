package approval

import (
	"context"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// DefaultRejection is what the model sees for a rejected call whose
// decision has no message.
const DefaultRejection = "Tool execution was not approved."

// An Option configures [Require].
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// A Formatter writes the output the model sees for a rejected call, from
// the call and the decision that rejected it.
type Formatter func(c *pipeline.ToolCall, d state.Decision) string

// WithRejectionFormatter sets how a rejected call's output reads. The
// default is the decision's message, or [DefaultRejection] if it has none.
// A nil formatter keeps the default.
func WithRejectionFormatter(f Formatter) Option {
	return optionFunc(func(c *config) {
		if f != nil {
			c.format = f
		}
	})
}

// WithErrorHandler sets a function told about policy and tool errors
// (which fail closed: the call needs approval), for logging. It must be
// safe for concurrent use.
func WithErrorHandler(f func(ctx context.Context, c *pipeline.ToolCall, err error)) Option {
	return optionFunc(func(c *config) { c.onErr = f })
}

type config struct {
	format Formatter
	onErr  func(ctx context.Context, c *pipeline.ToolCall, err error)
}

func newConfig(opts []Option) config {
	c := config{format: defaultFormat}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

func defaultFormat(_ *pipeline.ToolCall, d state.Decision) string {
	if d.Message != "" {
		return d.Message
	}
	return DefaultRejection
}
