package retry

import (
	"context"
	"errors"
	"time"

	"github.com/turnkit/turnkit/pipeline"
)

// Middleware returns the retry middleware: on the model stage, it calls
// the stage inside it again after an error of the retry class (by default
// a retryable *pipeline.ModelError), waiting with exponential backoff and
// jitter or as long as the server asked, up to the configured attempts
// and never past the context's deadline; then it falls back to the
// configured models, in order, on errors of their classes (see
// [WithFallback]). A streamed call whose events reached the run's stream
// is not made again.
//
// Every attempt passes through the stages inside as a call of its own
// ([pipeline.ModelCall.Attempt]), so the tracing middleware outside
// records one chat span per attempt, with its error. A failed attempt
// returns no response, so nothing of it is recorded: not in the run, not
// in a checkpoint, not in the session.
//
// When every attempt failed, the error is an [*Error] that says how many
// attempts were made and wraps the last attempt's error. A cancelled run
// returns the context's error as it is.
func Middleware(opts ...Option) pipeline.Middleware {
	cfg := newConfig(opts)
	return pipeline.Middleware{
		Name:  "retry",
		Model: func(next pipeline.Model) pipeline.Model { return &model{cfg: cfg, next: next} },
	}
}

type model struct {
	cfg  *config
	next pipeline.Model
}

// Respond makes the call's attempts. Nothing of the bookkeeping escapes
// to the heap until a call fails: a call that succeeds at once costs one
// attempt's copy of the call.
func (m *model) Respond(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
	cfg := m.cfg
	var (
		attempts, models int
		stopped, last    error
	)
	fail := func() error { return &Error{Attempts: attempts, Models: models, Stopped: stopped, Err: last} }
	for i := -1; i < len(cfg.fallbacks); i++ {
		var (
			use  pipeline.Model
			name string
		)
		if i >= 0 {
			fb := cfg.fallbacks[i]
			if !fb.On(last) {
				continue
			}
			use, name = fb.Model, fb.Name
		}
		models++
		stopped = nil
		for k := 1; ; k++ {
			a := c.Attempt(use)
			if name != "" {
				a.Settings.Model = name
			}
			resp, err := m.next.Respond(ctx, a)
			attempts++
			if err == nil {
				return resp, nil
			}
			last = err
			if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
				return nil, err // the run was cancelled: no model failed
			}
			if a.Emitted() {
				stopped = ErrStreamed
				return nil, fail()
			}
			if k >= cfg.attempts || !cfg.on(err) {
				break
			}
			wait := m.wait(k, err)
			if dl, ok := ctx.Deadline(); ok && !cfg.now().Add(wait).Before(dl) {
				stopped = ErrDeadline
				break
			}
			if serr := cfg.sleep(ctx, wait); serr != nil {
				stopped = serr
				return nil, fail()
			}
		}
	}
	return nil, fail()
}

// wait returns how long to wait before retry k (from 1) after err: the
// server's Retry-After if it gave one, else the backoff with jitter.
func (m *model) wait(k int, err error) time.Duration {
	if me, ok := errors.AsType[*pipeline.ModelError](err); ok && me.RetryAfter > 0 {
		return me.RetryAfter
	}
	d := m.cfg.base
	for range k - 1 {
		if d >= m.cfg.max/2 {
			d = m.cfg.max
			break
		}
		d *= 2
	}
	d = min(d, m.cfg.max)
	return d/2 + time.Duration(m.cfg.random()*float64(d/2))
}
