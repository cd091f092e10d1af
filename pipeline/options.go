package pipeline

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/turnkit/turnkit/state"
)

// DefaultMaxTurns is the turn limit of a run when neither the runner nor
// the run sets one.
const DefaultMaxTurns = 10

// An Option configures a [Runner].
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// A MaxTurnsHandler is called when a run reaches its turn limit. It may
// supply a final output (ok true), which ends the run normally; otherwise
// the run returns err, or the handler's own error if it returns one.
type MaxTurnsHandler func(ctx context.Context, run *state.Run, err *MaxTurnsError) (final string, ok bool, herr error)

type config struct {
	middleware      []Middleware
	maxTurns        int
	onMaxTurns      MaxTurnsHandler
	toolConcurrency int
	abortOnToolErr  bool
	abortOnTimeout  bool          // timeout.go
	toolTimeout     time.Duration // timeout.go
	keepToolChoice  bool          // toolchoice.go
	budget          *Budget       // budget.go
	reportInvalid   bool
	toolErrorText   func(c *ToolCall, err error) string
	newID           func() string
	recover         bool
}

func newConfig(opts []Option) config {
	c := config{
		maxTurns:        DefaultMaxTurns,
		toolConcurrency: 8,
		toolErrorText:   defaultToolErrorText,
		newID:           randomID,
	}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

// WithMiddleware adds middleware; the first one given is the outermost.
// Repeated calls add up, outer first.
func WithMiddleware(mws ...Middleware) Option {
	return optionFunc(func(c *config) { c.middleware = append(c.middleware, mws...) })
}

// WithMaxTurns sets the default turn limit of the runner's runs
// (default [DefaultMaxTurns]). Values below 1 are ignored.
func WithMaxTurns(n int) Option {
	return optionFunc(func(c *config) {
		if n > 0 {
			c.maxTurns = n
		}
	})
}

// WithMaxTurnsHandler sets the handler called when a run reaches its turn
// limit. A nil handler keeps the default, which returns *MaxTurnsError.
func WithMaxTurnsHandler(h MaxTurnsHandler) Option {
	return optionFunc(func(c *config) {
		if h != nil {
			c.onMaxTurns = h
		}
	})
}

// WithToolConcurrency bounds how many calls of one response run at once
// (default 8). Values below 1 are ignored.
func WithToolConcurrency(n int) Option {
	return optionFunc(func(c *config) {
		if n > 0 {
			c.toolConcurrency = n
		}
	})
}

// WithToolErrorsAbort makes a tool's error end the run with a *ToolError.
// By default the error's text goes back to the model as the tool's output.
func WithToolErrorsAbort() Option {
	return optionFunc(func(c *config) { c.abortOnToolErr = true })
}

// WithToolErrorText sets how a tool error reported to the model reads. A nil
// func keeps the default.
func WithToolErrorText(f func(c *ToolCall, err error) string) Option {
	return optionFunc(func(c *config) {
		if f != nil {
			c.toolErrorText = f
		}
	})
}

// WithInvalidCallsToModel reports calls to unknown tools and calls with
// malformed arguments to the model as the call's output, so it can correct
// itself. By default they end the run with *UnknownToolError or
// *ArgumentError.
func WithInvalidCallsToModel() Option {
	return optionFunc(func(c *config) { c.reportInvalid = true })
}

// WithIDGenerator sets the function that makes run IDs (default: 128 random
// bits in hex). A nil func keeps the default.
func WithIDGenerator(f func() string) Option {
	return optionFunc(func(c *config) {
		if f != nil {
			c.newID = f
		}
	})
}

// A RunOption configures one run.
type RunOption interface{ applyRun(*runConfig) }

type runOptionFunc func(*runConfig)

func (f runOptionFunc) applyRun(c *runConfig) { f(c) }

type runConfig struct {
	runID      string
	sessionID  string
	maxTurns   int
	run        *state.Run
	extensions []extension
}

type extension struct {
	key   string
	value json.RawMessage
}

// WithExtension sets the extension key of the run's state to value (see
// [state.Run.SetExtension]) before the run starts: how a component that
// keeps its own data in the state, such as a model adapter, is switched on
// for one run. Its packages offer run options built on it; value must be
// JSON.
func WithExtension(key string, value json.RawMessage) RunOption {
	value = append(json.RawMessage(nil), value...)
	return runOptionFunc(func(c *runConfig) { c.extensions = append(c.extensions, extension{key, value}) })
}

// WithRunID sets the run's ID instead of a generated one. With [WithState]
// the state's ID is the run's: a different WithRunID is an error.
func WithRunID(id string) RunOption { return runOptionFunc(func(c *runConfig) { c.runID = id }) }

// WithSessionID names the session the run's items persist to; the
// persistence middleware reads it from the run's state.
func WithSessionID(id string) RunOption {
	return runOptionFunc(func(c *runConfig) { c.sessionID = id })
}

// WithRunMaxTurns sets this run's turn limit, overriding the runner's.
func WithRunMaxTurns(n int) RunOption { return runOptionFunc(func(c *runConfig) { c.maxTurns = n }) }

// WithState makes the run record into run, a new state the caller made
// with [state.NewRun] and keeps a handle on: after an error or an early
// break out of [Runner.Stream], it is the resumable state. The run's ID is
// run.ID(); a state that already has items is refused.
func WithState(run *state.Run) RunOption { return runOptionFunc(func(c *runConfig) { c.run = run }) }

func defaultToolErrorText(_ *ToolCall, err error) string {
	return "An error occurred while running the tool. Please try again. Error: " + err.Error()
}

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never returns an error
	return "run_" + hex.EncodeToString(b[:])
}
