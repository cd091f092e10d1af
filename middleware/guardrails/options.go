package guardrails

import (
	"context"
	"fmt"

	"github.com/turnkit/turnkit/state"
)

// An Option configures a guardrail.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	name           string
	parallel       bool
	beforeApproval bool
	extra          []extraCheck
	blocked        blockedInput
	redact         RedactFunc
	history        bool
}

// blockedInput says what the session keeps of an input an input
// guardrail blocked.
type blockedInput uint8

const (
	keepBlocked   blockedInput = iota // stored as given (the default)
	dropBlocked                       // not stored
	redactBlocked                     // stored as the RedactFunc returns it
)

// A RedactFunc returns the form of a blocked input the session keeps: it
// gets the run's input items (a copy) and returns at most as many items,
// the i-th stored at the position of the i-th input item; input items
// beyond the returned ones are not stored. It must be safe for concurrent
// use. An error stores nothing of the input.
type RedactFunc func(ctx context.Context, input []state.Item) ([]state.Item, error)

// DropBlockedInput keeps an input the guardrail blocked out of the run.
// The checks then run before the run places its input (blocking;
// [WithParallel] has no effect on them), and a blocked input is never
// placed: the run's state, its checkpoints (middleware/checkpoint) and its
// session never hold it, and the run stops on its first turn with the
// [*TripwireError], before any model call. By default a blocked input is
// placed and stored, like any input, before the model is called.
//
// With [WithHistory] the checks need the history, which is read on the
// first turn, after the input was placed: the session middleware
// ([persistence.Middleware]) then stores the input only once the checks
// passed and never stores a blocked one, on this run or on a resume; a
// blocked input is taken out of the run's state again
// ([pipeline.Turn.WithholdInput]) before the tripwire returns, and the
// checkpointer (middleware/checkpoint) claims such a run only after the
// ruling, so no checkpoint holds it either.
//
// Only [Input] accepts it; a later DropBlockedInput or
// [RedactBlockedInput] replaces an earlier one.
//
// [persistence.Middleware]: https://pkg.go.dev/github.com/turnkit/turnkit/middleware/persistence#Middleware
func DropBlockedInput() Option {
	return optionFunc(func(c *config) { c.blocked, c.redact = dropBlocked, nil })
}

// RedactBlockedInput places the form f returns of an input the guardrail
// blocked in place of the input, where [DropBlockedInput] places nothing:
// the run's state, its checkpoints and its session hold the redacted form,
// never the original (with [WithHistory] too, as for DropBlockedInput). A nil f is ignored. Only [Input] accepts it; a later
// DropBlockedInput or RedactBlockedInput replaces an earlier one.
func RedactBlockedInput(f RedactFunc) Option {
	return optionFunc(func(c *config) {
		if f != nil {
			c.blocked, c.redact = redactBlocked, f
		}
	})
}

// WithHistory makes an input guardrail's checks see what the model will
// see on the run's first turn: the history the run starts from (the
// session's items as persistence loaded them, after its limit and merge)
// followed by the run's input, instead of the input alone. So a check can
// trip on what an earlier message left in the conversation. Only [Input]
// accepts it.
func WithHistory() Option { return optionFunc(func(c *config) { c.history = true }) }

// extraCheck is a check added with WithCheck; its type is checked against
// the guardrail's kind at construction.
type extraCheck struct {
	name  string
	check any
}

// WithName names the guardrail's check (the one passed to the
// constructor) in its results and errors. The default is the stage's name:
// "input", "output", "tool_input" or "tool_output" ("tool_input_before_approval"
// with [BeforeApproval]). An empty name keeps the default; a later call
// replaces an earlier one.
func WithName(name string) Option {
	return optionFunc(func(c *config) {
		if name != "" {
			c.name = name
		}
	})
}

// WithCheck adds a check to the guardrail under the given name. The checks
// of one guardrail run concurrently and the first tripwire (or error)
// cancels the rest; each that reaches a verdict records its own result. The
// check's kind must match the guardrail's (a Check[string] for [Output]…),
// and names must be unique within a guardrail: the constructor panics
// otherwise. Repeated calls add up. A nil check is ignored.
func WithCheck[T Subject](name string, check Check[T]) Option {
	return optionFunc(func(c *config) {
		if check != nil {
			c.extra = append(c.extra, extraCheck{name: name, check: check})
		}
	})
}

// WithParallel makes an input guardrail run beside the first model call
// instead of before it: the model call starts at once, a tripwire cancels
// it and discards its output, and the model stage returns only once every
// check passed, so no tool runs before the input was cleared. The default
// is blocking: the checks run, then the model. Only [Input] accepts it.
func WithParallel() Option { return optionFunc(func(c *config) { c.parallel = true }) }

// BeforeApproval makes a tool input guardrail check each call when the
// model makes it, before approval can pause it; place the guardrail outside
// the approval middleware. It does not check calls again when they run on
// resume (a guardrail inside approval does that). Only [ToolInput] accepts
// it. See the package documentation (# Tool guardrails and approval) for how
// its results count.
func BeforeApproval() Option { return optionFunc(func(c *config) { c.beforeApproval = true }) }

func newConfig(stage state.GuardrailStage, opts []Option) config {
	var c config
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if c.parallel && stage != state.StageInput {
		panic(fmt.Sprintf("guardrails: WithParallel given to a %s guardrail; only Input runs in parallel", stage))
	}
	if (c.blocked != keepBlocked || c.history) && stage != state.StageInput {
		panic(fmt.Sprintf("guardrails: DropBlockedInput, RedactBlockedInput or WithHistory given to a %s guardrail; only Input takes them", stage))
	}
	if c.beforeApproval && stage != state.StageToolInput {
		panic(fmt.Sprintf("guardrails: BeforeApproval given to a %s guardrail; only ToolInput runs before approval", stage))
	}
	if c.name == "" {
		c.name = stage.String()
		if c.beforeApproval {
			c.name += "_before_approval"
		}
	}
	return c
}

// checks returns the guardrail's checks, first the one given to the
// constructor, then those added with WithCheck. It panics on a nil first
// check, a check of another kind, or a repeated name.
func checks[T Subject](ctor string, first Check[T], c config) []named[T] {
	if first == nil {
		panic("guardrails: " + ctor + " called with a nil Check")
	}
	out := []named[T]{{name: c.name, check: first}}
	seen := map[string]bool{c.name: true}
	for _, x := range c.extra {
		ck, ok := x.check.(Check[T])
		if !ok {
			panic(fmt.Sprintf("guardrails: %s given WithCheck(%q) of type %T; want %T", ctor, x.name, x.check, first))
		}
		if x.name == "" || seen[x.name] {
			panic(fmt.Sprintf("guardrails: %s given WithCheck with an empty or repeated name %q", ctor, x.name))
		}
		seen[x.name] = true
		out = append(out, named[T]{name: x.name, check: ck})
	}
	return out
}
