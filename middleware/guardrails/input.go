package guardrails

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// Input returns a guardrail that checks a run's input: the items placed on
// its first turn ([pipeline.Turn.Input]). It runs on the first turn of a run
// only, never on later turns and never on resume, and records one result
// per check in the run's state before the model stage returns.
//
// By default it blocks: the checks run, then the model is called. With
// [WithParallel] the checks run beside the first model call. Either way no
// item of the first response is recorded and no tool runs before every
// check passed, and a tripwire ends the run with a [*TripwireError] whose
// State holds the run's input; the model's output, if any, is discarded. A
// check error ends the run with a [*CheckError]. The checks get the input
// alone, or with [WithHistory] the history before it too.
//
// A blocked input is stored in the run's state and session like any
// input, unless [DropBlockedInput] keeps it out or [RedactBlockedInput]
// puts a redacted form in its place: the checks then run before the run
// places its input, and the [*TripwireError]'s State holds what was placed
// (see the package documentation).
//
// The guardrail wraps the model stage (and the run stage, to refuse
// resuming a run it stopped). Its handlers are safe for concurrent use.
// Input panics if check is nil or an option does not apply (see
// [WithCheck]).
func Input(check Check[[]state.Item], opts ...Option) pipeline.Middleware {
	cfg := newConfig(state.StageInput, opts)
	g := &input{checks: checks("Input", check, cfg), parallel: cfg.parallel,
		blocked: cfg.blocked, redact: cfg.redact, history: cfg.history}
	refuse := refuseTripped(state.StageInput, g.checks)
	run := refuse
	if g.blocked != keepBlocked {
		run = func(next pipeline.RunHandler) pipeline.RunHandler {
			inner := refuse(next)
			return pipeline.RunHandlerFunc(func(ctx context.Context, c *pipeline.RunCall) (*pipeline.Result, error) {
				switch {
				case c.Resumed:
				case g.history:
					// The history is read on the first turn: the checks
					// run in the model stage, and the session waits for
					// their ruling.
					ctx, _ = pipeline.HoldInput(ctx)
				default:
					ctx = context.WithValue(ctx, ruledKey{g}, g.rule(ctx, c))
				}
				return inner.ServeRun(ctx, c)
			})
		}
	}
	return pipeline.Middleware{
		Name: "guardrails.Input",
		Run:  run,
		Model: func(next pipeline.Model) pipeline.Model {
			return &inputModel{input: g, next: next}
		},
	}
}

type input struct {
	checks   []named[[]state.Item]
	parallel bool
	blocked  blockedInput
	redact   RedactFunc
	history  bool
}

// ruledKey carries, to the model stage, the ruling g made on a run's
// input before the run placed it.
type ruledKey struct{ g *input }

// A ruling is what the checks said of a run's input before it was placed:
// nothing (passed), a tripwire (with what the redaction failed of, if it
// did), or a check error.
type ruling struct {
	err   error
	trip  *TripwireError
	extra error
}

// rule runs the checks on a run's input before the run places it. On a
// tripwire the input is replaced (c.Input) by its stored form: nothing,
// or the redacted items, so the blocked input never enters the run's
// state, its checkpoints or its session.
func (g *input) rule(ctx context.Context, c *pipeline.RunCall) *ruling {
	in := slices.Clone(c.Input)
	sc := scope{run: c.Run, stage: state.StageInput, turn: 1}
	if c.Streaming() {
		sc.emit = c.Emit
	}
	_, err := evaluate(ctx, g.checks, c.Agent, in, sc)
	tw, tripped := errors.AsType[*TripwireError](err)
	if !tripped {
		return &ruling{err: err}
	}
	stored, rerr := g.storedForm(ctx, c.Run.ID(), in)
	c.Input = stored
	return &ruling{trip: tw, extra: rerr}
}

// storedForm returns what the session keeps of a blocked input: nothing
// (DropBlockedInput), or the redacted items; an error keeps nothing.
func (g *input) storedForm(ctx context.Context, runID string, in []state.Item) ([]state.Item, error) {
	if g.blocked == dropBlocked {
		return nil, nil
	}
	stored, err := g.redact(ctx, slices.Clone(in))
	if err != nil {
		return nil, fmt.Errorf("guardrails: redact blocked input of run %s: %w", runID, err)
	}
	if len(stored) > len(in) {
		return nil, fmt.Errorf("guardrails: redact blocked input of run %s: %d items for %d input items", runID, len(stored), len(in))
	}
	for i, it := range stored {
		if it.IsZero() {
			return nil, fmt.Errorf("guardrails: redact blocked input of run %s: item %d is the zero Item", runID, i)
		}
	}
	return stored, nil
}

// result returns the ruling as the model stage of turn t returns it: a
// tripwire with the run's state as it is now.
func (r *ruling) result(t *pipeline.Turn) error {
	if r.trip == nil {
		return r.err
	}
	tw := *r.trip
	tw.State = t.Run.Clone()
	if r.extra != nil {
		return errors.Join(&tw, r.extra)
	}
	return &tw
}

// check evaluates the checks on the run's input (with the history before
// it, with WithHistory) and, on a tripwire, rules on what the session
// keeps of the input.
func (g *input) check(ctx context.Context, c *pipeline.ModelCall, sc scope) error {
	t := c.Turn
	subject := slices.Clone(t.Input)
	if g.history {
		subject = c.Input.Slice()
	}
	_, err := evaluate(ctx, g.checks, t.Agent, subject, sc)
	if err == nil || g.blocked == keepBlocked {
		return err
	}
	hold := pipeline.InputHoldFrom(ctx)
	if _, tripped := errors.AsType[*TripwireError](err); !tripped || hold == nil {
		return err
	}
	stored, rerr := g.storedForm(ctx, t.Run.ID(), t.Input)
	hold.Withhold(stored)
	// The run's state holds the input since it was placed: it gets the
	// stored form too, before the tripwire hands the state out.
	if werr := t.WithholdInput(stored); werr != nil {
		rerr = errors.Join(rerr, werr)
	} else if tw, ok := errors.AsType[*TripwireError](err); ok {
		tw.State = t.Run.Clone()
	}
	if rerr != nil {
		return errors.Join(err, rerr)
	}
	return err
}

type inputModel struct {
	*input
	next pipeline.Model
}

// Respond checks the run's input on its first model call.
func (h *inputModel) Respond(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
	t := c.Turn
	if t == nil || t.Number != 1 || t.Resumed {
		return h.next.Respond(ctx, c)
	}
	if r, ok := ctx.Value(ruledKey{h.input}).(*ruling); ok {
		if err := r.result(t); err != nil {
			return nil, err
		}
		return h.next.Respond(ctx, c)
	}
	sc := scope{run: t.Run, stage: state.StageInput, turn: t.Number, t: t}
	if !h.parallel {
		if err := h.check(ctx, c, sc); err != nil {
			return nil, err
		}
		return h.next.Respond(ctx, c)
	}

	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		resp  *pipeline.ModelResponse
		err   error
		panic any
	}
	ch := make(chan answer, 1)
	go func() {
		var a answer
		defer func() {
			a.panic = recover()
			ch <- a
		}()
		a.resp, a.err = h.next.Respond(mctx, c)
	}()
	gerr := h.check(ctx, c, sc)
	if gerr != nil {
		cancel() // the model's output is discarded
	}
	a := <-ch
	if a.panic != nil {
		panic(a.panic)
	}
	if gerr != nil {
		return nil, gerr
	}
	return a.resp, a.err
}

// refuseTripped returns a run stage that refuses to resume a run in which
// one of the checks tripped: the verdict stands, so the resumed run ends
// with the same *TripwireError (its Info the recorded JSON, a
// json.RawMessage) before any turn runs.
//
// A result a nested run recorded (an agent used as a tool; its Owner is
// set) stopped the run only if the call that ran the nested run has no
// output: the run aborted on it. When the model was told of the nested
// failure instead, the run went on, and its resume is not refused.
func refuseTripped[T Subject](stage state.GuardrailStage, checks []named[T]) func(pipeline.RunHandler) pipeline.RunHandler {
	return func(next pipeline.RunHandler) pipeline.RunHandler {
		return pipeline.RunHandlerFunc(func(ctx context.Context, c *pipeline.RunCall) (*pipeline.Result, error) {
			if c.Resumed {
				for _, r := range c.Run.GuardrailResults() {
					if !r.Tripped || r.Stage != stage || !slices.ContainsFunc(checks, func(n named[T]) bool { return n.name == r.Name }) {
						continue
					}
					if call, _, _ := strings.Cut(r.Owner, "/"); call != "" {
						if _, answered := c.Run.Completed(call); answered {
							continue
						}
					}
					return nil, &TripwireError{Guardrail: r.Name, Stage: r.Stage, Turn: r.Turn, CallID: r.CallID, Info: r.Info, Result: r, State: c.Run.Clone()}
				}
			}
			return next.ServeRun(ctx, c)
		})
	}
}
