package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// An Option configures a [Toolset].
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	prefix bool
	text   bool // results as text only (WithTextResults)
	onErr  func(error)
	client *sdk.Implementation
	// sampling serves the servers' sampling requests; nil: not offered.
	sampling func(context.Context, *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error)
	changed  func()
	// elicit says how requests for input are served (elicitOff,
	// elicitPause, elicitHandle); onElicit answers them with elicitHandle.
	elicit   int
	onElicit ElicitationHandler
}

func newConfig(opts []Option) config {
	c := config{client: &sdk.Implementation{Name: "turnkit", Version: "v0"}}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

// WithServerPrefix names every tool "<server>_<tool>", so that servers
// offering the same tool name can be used together. Without it (the
// default) such a clash fails [Connect] with a [*DuplicateToolError].
func WithServerPrefix() Option {
	return optionFunc(func(c *config) { c.prefix = true })
}

// WithErrorHandler sets the function told about errors that no caller
// receives: a background refresh that failed or would duplicate a name. It
// must be safe for concurrent use. The default drops them; a nil f keeps
// the default. The last one given wins.
func WithErrorHandler(f func(error)) Option {
	return optionFunc(func(c *config) {
		if f != nil {
			c.onErr = f
		}
	})
}

// WithClientInfo sets the name and version the toolset's MCP clients
// announce (default "turnkit", "v0"). A nil impl keeps the default.
func WithClientInfo(impl *sdk.Implementation) Option {
	return optionFunc(func(c *config) {
		if impl != nil {
			c.client = impl
		}
	})
}

// WithToolsChanged sets a function called after a refresh changed the
// toolset's tools (a list_changed notification or [Toolset.Refresh]), for
// instance to rebuild agents with [Toolset.Tools]. It must not block for
// long and must be safe for concurrent use. A nil f is ignored.
func WithToolsChanged(f func()) Option {
	return optionFunc(func(c *config) {
		if f != nil {
			c.changed = f
		}
	})
}

// WithTextResults makes the toolset's tools answer the model with text
// only, as [Tool.Call] does: an image, audio or embedded resource in a
// result is described as one line of JSON, without its data, instead of
// being sent as a content part. Use it with a model API that takes text
// only in tool outputs, such as Chat Completions (whose adapter refuses a
// tool output with an image or a file, with a typed error, rather than
// drop it).
func WithTextResults() Option {
	return optionFunc(func(c *config) { c.text = true })
}
