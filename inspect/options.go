package inspect

import (
	"context"
	"net/http"
	"strings"

	"github.com/turnkit/turnkit/state"
)

// An Option configures a [Handler].
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// A Redactor returns what the inspector shows of a payload (a message's
// text, a call's arguments, an output): the payload itself, or a masked
// form of it. It must be safe for concurrent use.
type Redactor func(payload string) string

// An Authorizer decides whether the request may change a run: nil allows
// it, an error refuses it (the page shows the error's text, with status
// 403). It must be safe for concurrent use.
type Authorizer func(r *http.Request) error

// A DecideFunc does what follows a decision made in the inspector. run is
// the checkpoint as loaded, with the decision recorded on it ([state.Run.Approve]
// or [state.Run.Reject]) and not yet saved: the function resumes it (as
// approval.Resume does, which saves it first, with compare-and-swap) or
// saves it for a worker (riverrun). An error is shown on the page; the
// handler itself saves nothing and runs no tool.
type DecideFunc func(ctx context.Context, run *state.Run) error

type config struct {
	pageSize  int
	traceURL  string
	redact    Redactor
	authorize Authorizer
	decide    DecideFunc
	verify    state.Store
	title     string
}

func newConfig(opts []Option) config {
	c := config{pageSize: 50, redact: func(s string) string { return s }, title: "turnkit"}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

// WithPageSize sets how many sessions, runs or items a page shows. The
// default is 50; n <= 0 keeps it, and more than 1000 means 1000.
func WithPageSize(n int) Option {
	return optionFunc(func(c *config) {
		if n > 0 {
			c.pageSize = min(n, 1000)
		}
	})
}

// WithTraceURL sets the template of a run's trace link: "{trace_id}" in it
// is replaced by the 32 hex digits of the trace ID the run recorded (its
// W3C traceparent), as in "https://jaeger.example/trace/{trace_id}". A
// run without a trace ID gets no link. The default is no links; an empty
// template keeps it, and a later call replaces an earlier one.
func WithTraceURL(template string) Option {
	return optionFunc(func(c *config) {
		if strings.Contains(template, "{trace_id}") {
			c.traceURL = template
		}
	})
}

// WithRedactor sets the function that masks payloads before they are
// shown. The default shows them as stored; nil keeps it.
func WithRedactor(r Redactor) Option {
	return optionFunc(func(c *config) {
		if r != nil {
			c.redact = r
		}
	})
}

// WithVerifyStore sets a second view of the same checkpoints, opened with
// the keys that verify their signatures (each store's WithCodec with
// [state.WithVerifyKeys]): a run's page loads it through that view too
// and says whether its signature verifies, and why not. The default
// checks nothing; nil keeps it.
func WithVerifyStore(s state.Store) Option {
	return optionFunc(func(c *config) {
		if s != nil {
			c.verify = s
		}
	})
}

// WithWrites enables approving and rejecting pending calls. authorize is
// called on every write before anything is loaded, and decide does what
// follows a decision (see [DecideFunc]). Without this option the handler
// is read-only: it shows no write form and refuses every write. A nil
// authorize or decide panics: writes without authorization are not an
// option.
func WithWrites(authorize Authorizer, decide DecideFunc) Option {
	if authorize == nil || decide == nil {
		panic("inspect: WithWrites needs an authorization hook and a decision hook")
	}
	return optionFunc(func(c *config) { c.authorize, c.decide = authorize, decide })
}

// WithTitle sets the name the pages show. The default is "turnkit"; ""
// keeps it.
func WithTitle(title string) Option {
	return optionFunc(func(c *config) {
		if title != "" {
			c.title = title
		}
	})
}
