package gemini

import (
	"maps"

	"google.golang.org/genai"
)

// An Option configures a [Model].
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	model    string
	safety   []*genai.SafetySetting
	thinking *genai.ThinkingConfig
	http     *genai.HTTPOptions
	edit     []func(*genai.GenerateContentConfig)
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

// WithModel sets the model name (such as "gemini-2.5-flash") used when an
// agent's [pipeline.ModelSettings].Model is empty. There is no default: a
// call with neither fails with an error. A later call replaces an earlier
// one; an empty name is ignored.
func WithModel(name string) Option {
	return optionFunc(func(c *config) {
		if name != "" {
			c.model = name
		}
	})
}

// WithSafetySettings sets the safety settings sent with every request
// (harm category and block threshold). By default none are sent and the
// API's defaults apply. Repeated calls add up; nil settings are ignored.
// The settings are copied: changing them afterwards changes nothing.
func WithSafetySettings(settings ...*genai.SafetySetting) Option {
	return optionFunc(func(c *config) {
		for _, s := range settings {
			if s != nil {
				cp := *s
				c.safety = append(c.safety, &cp)
			}
		}
	})
}

// WithThinking sets the thinking configuration sent with every request:
// a thinking budget (ThinkingBudget) or level (ThinkingLevel), and
// IncludeThoughts, which asks for thought summaries (recorded as
// reasoning items). It takes precedence over the agent's
// [pipeline.ModelSettings].ReasoningEffort. By default none is sent. A
// later call replaces an earlier one. The config is copied.
func WithThinking(tc genai.ThinkingConfig) Option {
	return optionFunc(func(c *config) {
		if tc.ThinkingBudget != nil {
			b := *tc.ThinkingBudget
			tc.ThinkingBudget = &b
		}
		c.thinking = &tc
	})
}

// WithHTTPOptions sets per-request HTTP options (headers, timeout, API
// version, retry options, extra body), applied over the client's own.
// Retries are the client's: the adapter never retries by itself. A later
// call replaces an earlier one. The options are copied, and each request
// gets a copy of its own.
func WithHTTPOptions(o genai.HTTPOptions) Option {
	return optionFunc(func(c *config) {
		o.Headers = o.Headers.Clone()
		o.ExtraBody = maps.Clone(o.ExtraBody)
		c.http = &o
	})
}

// WithConfig adds a function that edits each request's config after the
// adapter filled it, for the settings this package has no option for
// (top-k, seed, stop sequences, cached content, media resolution …). It
// is called once per model call, possibly from many goroutines at once:
// it must be safe for concurrent use and must not keep the config, which
// belongs to that call. It may set and replace fields, but must not
// change what the safety settings and the thinking config point to:
// every call shares those. Repeated calls add up, applied in order; nil
// is ignored.
func WithConfig(edit func(*genai.GenerateContentConfig)) Option {
	return optionFunc(func(c *config) {
		if edit != nil {
			c.edit = append(c.edit, edit)
		}
	})
}
