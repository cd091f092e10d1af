package guardrails

import (
	"context"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// Output returns a guardrail that checks a run's final output: after a
// turn whose next step is [pipeline.NextFinalOutput] (a final message, or a
// terminal tool's output, on a fresh or a resumed turn), the checks run
// concurrently on [pipeline.NextStep.Output], with the turn's agent (the
// final agent); the first tripwire cancels the rest. Turns that do not end
// the run are not checked.
//
// Every check's result is recorded in the run's state before the turn
// returns. A tripwire ends the run with a [*TripwireError]: the run is not
// finished and a persistence middleware outside this one discards the
// turn's held-back model output. A check error ends the run with a
// [*CheckError], and the turn's items are kept.
//
// The guardrail wraps the turn stage (and the run stage, to refuse resuming
// a run it stopped). Place it inside persistence. Its handlers are safe for
// concurrent use. Output panics if check is nil or an option does not apply.
func Output(check Check[string], opts ...Option) pipeline.Middleware {
	cfg := newConfig(state.StageOutput, opts)
	cs := checks("Output", check, cfg)
	return pipeline.Middleware{
		Name: "guardrails.Output",
		Run:  refuseTripped(state.StageOutput, cs),
		Turn: func(next pipeline.Handler) pipeline.Handler {
			return &output{checks: cs, next: next}
		},
	}
}

type output struct {
	checks []named[string]
	next   pipeline.Handler
}

// ServeTurn serves the turn, then checks its final output, if it has one.
func (h *output) ServeTurn(ctx context.Context, t *pipeline.Turn) error {
	if err := h.next.ServeTurn(ctx, t); err != nil {
		return err
	}
	if t.Next.Kind != pipeline.NextFinalOutput {
		return nil
	}
	_, err := evaluate(ctx, h.checks, t.Agent, t.Next.Output, scope{run: t.Run, stage: state.StageOutput, turn: t.Number, t: t})
	return err
}
