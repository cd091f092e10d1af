package openai

import (
	"fmt"

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
	// The Responses API's own settings: an agent that wants others uses a
	// model of its own.
	truncation string
	summary    string
	store      *bool
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
// when [WithStore] is false. A [ChatModel] given it fails its calls with
// [ErrUnsupportedSetting]. Repeated calls add up; empty fields are ignored.
func WithInclude(fields ...string) Option {
	return optionFunc(func(c *config) {
		for _, f := range fields {
			if f != "" {
				c.include = append(c.include, f)
			}
		}
	})
}

// WithTruncation sets the Responses API's truncation: "auto" lets the API
// drop items from the middle of a conversation that outgrew the model's
// context, "disabled" (the API's default) fails such a request. The
// default, "", sends none. A [ChatModel] given it fails its calls with
// [ErrUnsupportedSetting]. A later call replaces an earlier one.
//
// It is the model's setting, for every agent the model serves: an agent
// that needs another truncation gets a [Model] of its own.
func WithTruncation(mode string) Option {
	return optionFunc(func(c *config) { c.truncation = mode })
}

// WithReasoningSummary asks a reasoning model of the Responses API for a
// summary of its reasoning: "auto", "concise" or "detailed". The
// summaries come back in the reasoning items. The default, "", asks for
// none; the reasoning effort is the agent's
// ([pipeline.ModelSettings].ReasoningEffort). A [ChatModel] given it
// fails its calls with [ErrUnsupportedSetting]. A later call replaces an
// earlier one.
func WithReasoningSummary(summary string) Option {
	return optionFunc(func(c *config) { c.summary = summary })
}

// WithStore sets the store flag of every request: whether the API keeps
// the responses (Responses API) or completions (Chat Completions). By
// default none is sent, and the API's default applies (the Responses API
// stores). [ChainResponses] and [ChainFrom] need stored responses. A later
// call replaces an earlier one.
func WithStore(store bool) Option {
	return optionFunc(func(c *config) { c.store = &store })
}

// chatUnsupported returns the error every call of a [ChatModel] with c
// fails with: one naming the first Responses API setting c holds, which
// Chat Completions has no place for, or nil.
func (c *config) chatUnsupported() error {
	var name string
	switch {
	case c.truncation != "":
		name = "WithTruncation"
	case c.summary != "":
		name = "WithReasoningSummary"
	case len(c.include) > 0:
		name = "WithInclude"
	case c.toolSearch:
		name = "WithHostedToolSearch"
	default:
		return nil
	}
	return fmt.Errorf("%w: %s is a Responses API setting; the Chat Completions API has none (use New)", ErrUnsupportedSetting, name)
}
