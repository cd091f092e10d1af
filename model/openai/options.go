package openai

import (
	"github.com/openai/openai-go/v3/option"
)

// An Option configures a [Model] or a [ChatModel].
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	model      string
	reqOpts    []option.RequestOption
	include    []string
	toolSearch bool // deferred tools through the hosted tool search (WithHostedToolSearch)
}

func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

// WithModel sets the model name used when an agent's
// [pipeline.ModelSettings].Model is empty. There is no default: a call
// with neither fails with an error. A later call replaces an earlier one;
// an empty name is ignored.
func WithModel(name string) Option {
	return optionFunc(func(c *config) {
		if name != "" {
			c.model = name
		}
	})
}

// WithRequestOptions adds openai-go request options applied to every
// request after the client's own, such as option.WithMaxRetries,
// option.WithRequestTimeout or option.WithHeader. Retries are the
// client's: the adapter never retries by itself. Repeated calls add up;
// nil options are ignored.
func WithRequestOptions(opts ...option.RequestOption) Option {
	return optionFunc(func(c *config) {
		for _, o := range opts {
			if o != nil {
				c.reqOpts = append(c.reqOpts, o)
			}
		}
	})
}

// WithInclude asks the Responses API to include extra output data, such as
// "reasoning.encrypted_content", which keeps reasoning usable across turns
// when the store setting is false. It has no effect on [ChatModel].
// Repeated calls add up.
func WithInclude(fields ...string) Option {
	return optionFunc(func(c *config) {
		for _, f := range fields {
			if f != "" {
				c.include = append(c.include, f)
			}
		}
	})
}
