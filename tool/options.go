package tool

import (
	"context"
	"encoding/json"
	"time"

	"github.com/turnkit/turnkit/pipeline"
)

// An Option configures a tool made by [Func].
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	grammar      json.RawMessage // Text's input format; nil for free text
	strict       bool
	approvalSet  bool
	approval     bool
	approvalFunc func(ctx context.Context, c *pipeline.ToolCall) (bool, error)
	timeout      time.Duration
	enabled      pipeline.Condition
}

func newConfig(opts []Option) config {
	c := config{strict: true}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

// NeedsApproval makes the tool a [pipeline.ApprovalRequirer] that answers
// need for every call. Without it (or [NeedsApprovalFunc]) the tool leaves
// the decision to the approval middleware's policy. The last of
// NeedsApproval and NeedsApprovalFunc given wins.
func NeedsApproval(need bool) Option {
	return optionFunc(func(c *config) {
		c.approvalSet, c.approval, c.approvalFunc = true, need, nil
	})
}

// NeedsApprovalFunc makes the tool a [pipeline.ApprovalRequirer] that asks
// f for each call. f must be safe for concurrent use; an error fails closed
// (the approval middleware treats the call as needing approval). A nil f
// is ignored. The last of NeedsApproval and NeedsApprovalFunc given wins.
func NeedsApprovalFunc(f func(ctx context.Context, c *pipeline.ToolCall) (bool, error)) Option {
	return optionFunc(func(c *config) {
		if f != nil {
			c.approvalSet, c.approvalFunc = false, f
		}
	})
}

// WithStrict sets whether the tool asks the model to follow its schema
// exactly (default true). Strict is reported only when the input type can
// be described in strict mode; see the package documentation.
func WithStrict(strict bool) Option {
	return optionFunc(func(c *config) { c.strict = strict })
}

// Grammar constrains a [Text] tool's input to a grammar: syntax is "lark"
// or "regex", and definition the grammar itself. Without it the input is
// free text. Func panics if given Grammar.
func Grammar(syntax, definition string) Option {
	return optionFunc(func(c *config) {
		b, _ := json.Marshal(struct {
			Type       string `json:"type"`
			Syntax     string `json:"syntax"`
			Definition string `json:"definition"`
		}{"grammar", syntax, definition})
		c.grammar = b
	})
}

// WithTimeout limits each call of the tool to d: the context its func
// gets has that deadline, and a call that returns an error once it passed
// is a [*pipeline.ToolTimeoutError], which the model sees as the call's
// output, or which ends the run, as the runner is configured
// ([pipeline.WithToolErrorsAbort], [pipeline.WithToolTimeoutsAbort]). The
// func must honour its context for the limit to stop it. It overrides the
// runner's default ([pipeline.WithToolTimeout]); d below 0 means no limit
// even when the runner has a default, and 0 leaves the default.
func WithTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.timeout = d })
}

// WithEnabled offers the tool only on the turns cond reports true for (see
// [pipeline.Condition]): on the others it is not sent to the model, and a
// call to it gets a [*pipeline.ToolDisabledError] as its output. A nil
// cond leaves the tool always enabled.
func WithEnabled(cond pipeline.Condition) Option {
	return optionFunc(func(c *config) { c.enabled = cond })
}
