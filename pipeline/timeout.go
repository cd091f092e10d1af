package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/turnkit/turnkit/state"
)

// ErrToolTimeout means a tool call ran past its time limit. It is wrapped
// by [*ToolTimeoutError].
var ErrToolTimeout = errors.New("pipeline: tool call timed out")

// A TimeoutTool is a [Tool] with a time limit of its own for each call
// (tool.WithTimeout gives one to the tools of package tool). Timeout
// returns the limit: above 0, the call's context gets that deadline; 0,
// the runner's default applies ([WithToolTimeout]); below 0, the call has
// no limit, whatever the runner's default.
type TimeoutTool interface {
	Tool
	Timeout() time.Duration
}

// A ToolTimeoutError reports a tool call that ran past its time limit:
// its context's deadline passed, while the run's did not, and the tool
// returned an error. Like any tool error it is the call's output, which
// the model sees, unless the runner aborts on tool errors
// ([WithToolErrorsAbort]) or on timeouts ([WithToolTimeoutsAbort]); then
// the run ends with a [*ToolError] that wraps it.
type ToolTimeoutError struct {
	Tool    string
	CallID  string
	Timeout time.Duration
	// Err is what the tool returned.
	Err error
}

// Error says what failed, where, and why.
func (e *ToolTimeoutError) Error() string {
	return fmt.Sprintf("pipeline: tool %q call %s timed out after %v", e.Tool, e.CallID, e.Timeout)
}

// Unwrap returns [ErrToolTimeout] and the tool's error.
func (e *ToolTimeoutError) Unwrap() []error { return []error{ErrToolTimeout, e.Err} }

// WithToolTimeout sets the time limit of every tool call whose tool has
// none of its own (see [TimeoutTool]): the call's context gets the
// deadline, and a call that returns an error once it passed is a
// [*ToolTimeoutError]. A tool must honour its context for the limit to
// stop it. Values below 1 mean no limit (the default).
func WithToolTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.toolTimeout = max(d, 0) })
}

// WithToolTimeoutsAbort makes a tool call that timed out end the run with
// a [*ToolError] wrapping the [*ToolTimeoutError], even when other tool
// errors go back to the model as the call's output (the default).
func WithToolTimeoutsAbort() Option {
	return optionFunc(func(c *config) { c.abortOnTimeout = true })
}

// toolTimeout returns the time limit of call c, 0 for none.
func (r *Runner) toolTimeout(c *ToolCall) time.Duration {
	if tt, ok := c.Tool.(TimeoutTool); ok {
		switch d := tt.Timeout(); {
		case d > 0:
			return d
		case d < 0:
			return 0
		}
	}
	return r.cfg.toolTimeout
}

// callWithTimeout calls the tool of c with a context limited to d, and
// turns an error returned once that limit passed (but not the run's
// context) into a *ToolTimeoutError.
func callWithTimeout(ctx context.Context, c *ToolCall, d time.Duration) (string, []state.ContentPart, error) {
	tctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	out, parts, err := invokeTool(tctx, c)
	if err != nil && ctx.Err() == nil && errors.Is(tctx.Err(), context.DeadlineExceeded) && !errors.Is(err, ErrToolPending) {
		err = &ToolTimeoutError{Tool: c.Name, CallID: c.CallID, Timeout: d, Err: err}
	}
	return out, parts, err
}

// invokeTool calls the tool of c: CallContent for a [ContentTool], else
// Call.
func invokeTool(ctx context.Context, c *ToolCall) (string, []state.ContentPart, error) {
	if ct, ok := c.Tool.(ContentTool); ok {
		return ct.CallContent(ctx, c)
	}
	out, err := c.Tool.Call(ctx, c)
	return out, nil, err
}
