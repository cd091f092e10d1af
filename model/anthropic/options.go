package anthropic

import (
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// An Option configures a [Model].
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// DefaultMaxTokens is the max_tokens a request carries when neither the
// agent's settings (MaxOutputTokens) nor [WithMaxTokens] set it: the
// Messages API requires one.
const DefaultMaxTokens = 4096

// A CachePoint is a place in the request where the adapter sets a
// cache_control breakpoint ({"type":"ephemeral"}): the prompt up to and
// including it is cached.
type CachePoint uint8

// The cache points.
const (
	// CacheTools marks the last tool definition.
	CacheTools CachePoint = iota + 1
	// CacheSystem marks the last system block (the instructions).
	CacheSystem
	// CacheHistory marks the last content block of the last message, so
	// that the next call of the run reads the whole history from the
	// cache.
	CacheHistory
)

type config struct {
	model     string
	maxTokens int64
	thinking  int64 // budget_tokens; 0: thinking off
	cache     [CacheHistory + 1]bool
	ttl       string
	reqOpts   []option.RequestOption
	// outputTool: structured output as a forced tool call.
	outputTool bool
}

func newConfig(opts []Option) config {
	c := config{maxTokens: DefaultMaxTokens}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

// WithModel sets the model name used when an agent's
// [pipeline.ModelSettings].Model is empty, such as "claude-sonnet-4-5".
// There is no default: a call with neither fails before any request. A
// later call replaces an earlier one; an empty name is ignored.
func WithModel(name string) Option {
	return optionFunc(func(c *config) {
		if name != "" {
			c.model = name
		}
	})
}

// WithMaxTokens sets max_tokens for calls whose agent's settings leave
// MaxOutputTokens nil. The default is [DefaultMaxTokens]; values below 1
// are ignored. A later call replaces an earlier one.
func WithMaxTokens(n int64) Option {
	return optionFunc(func(c *config) {
		if n > 0 {
			c.maxTokens = n
		}
	})
}

// WithThinking turns extended thinking on with the given budget_tokens
// (at least 1024, and below max_tokens, as the API requires; a call whose
// max_tokens is not above the budget fails before the request). The
// model's thinking blocks are recorded as reasoning items and sent back
// verbatim, signatures included. The default is off; 0 turns it off. A
// later call replaces an earlier one.
func WithThinking(budgetTokens int64) Option {
	return optionFunc(func(c *config) {
		if budgetTokens >= 0 {
			c.thinking = budgetTokens
		}
	})
}

// WithCacheControl sets cache_control breakpoints at the given points of
// every request. The default is none. Repeated calls add up; unknown
// points are ignored.
func WithCacheControl(points ...CachePoint) Option {
	return optionFunc(func(c *config) {
		for _, p := range points {
			if p >= CacheTools && p <= CacheHistory {
				c.cache[p] = true
			}
		}
	})
}

// WithCacheTTL sets the ttl of the cache_control breakpoints, "5m" or
// "1h"; the default ("") is the API's, five minutes. A later call
// replaces an earlier one.
func WithCacheTTL(ttl string) Option {
	return optionFunc(func(c *config) { c.ttl = ttl })
}

// WithOutputTool asks for an agent's structured output by a forced tool
// call instead of the API's native structured outputs (output_config),
// for models without them. The request carries a tool named after the
// output ([pipeline.OutputSpec].Name, "output" when empty) whose input
// schema is the output's schema, first among the tools, and tool_choice
// forces it ("any" when the agent has tools of its own, so that the model
// may call them first); the tool_use's input becomes the assistant
// message the run decodes as its output, so that an output that does not
// decode is a [*pipeline.OutputError] and a refusal a
// [*pipeline.RefusalError] as with native structured output. When the
// call streams, the input's JSON deltas are emitted as
// [pipeline.TextDelta]s. The agent's own ToolChoice is not read for such
// a call; thinking ([WithThinking]) cannot be combined with it (the API
// takes a forced tool_choice only without thinking), and a call with
// both fails before the request. The default is native structured
// output.
func WithOutputTool() Option {
	return optionFunc(func(c *config) { c.outputTool = true })
}

// WithRequestOptions adds anthropic-sdk-go request options applied to
// every request after the client's own, such as option.WithMaxRetries or
// option.WithHeader (a beta header, say). Retries are the client's: the
// adapter never retries by itself. Repeated calls add up; nil options are
// ignored.
func WithRequestOptions(opts ...option.RequestOption) Option {
	return optionFunc(func(c *config) {
		for _, o := range opts {
			if o != nil {
				c.reqOpts = append(c.reqOpts, o)
			}
		}
	})
}
