package guardrails

import (
	"context"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// OutputItems returns an output guardrail whose checks get the items of
// the response that ends the run instead of its text: every item the model
// produced in that response, in model order (messages, reasoning, calls,
// hosted calls such as web searches and MCP calls, opaque items of types
// turnkit does not know), then the outputs of its calls. Everything else is
// as for [Output]: it checks the turns whose next step is
// [pipeline.NextFinalOutput], records every result, and a tripwire ends
// the run with a [*TripwireError] that discards the held-back output.
//
// The slice belongs to the check; the items are immutable values. Results
// are recorded at the output stage. OutputItems panics if check is nil or
// an option does not apply.
func OutputItems(check Check[[]state.Item], opts ...Option) pipeline.Middleware {
	cfg := newConfig(state.StageOutput, opts)
	cs := checks("OutputItems", check, cfg)
	return pipeline.Middleware{
		Name: "guardrails.OutputItems",
		Run:  refuseTripped(state.StageOutput, cs),
		Turn: func(next pipeline.Handler) pipeline.Handler {
			return &outputItems{checks: cs, next: next}
		},
	}
}

type outputItems struct {
	checks []named[[]state.Item]
	next   pipeline.Handler
}

// ServeTurn serves the turn, then checks its response's items if the turn
// ends the run.
func (h *outputItems) ServeTurn(ctx context.Context, t *pipeline.Turn) error {
	if err := h.next.ServeTurn(ctx, t); err != nil {
		return err
	}
	if t.Next.Kind != pipeline.NextFinalOutput {
		return nil
	}
	_, err := evaluate(ctx, h.checks, t.Agent, responseItems(t.Run), scope{run: t.Run, stage: state.StageOutput, turn: t.Number, t: t})
	return err
}

// responseItems returns the items of the run's current response and the
// outputs of its calls, by position.
func responseItems(run *state.Run) []state.Item {
	b := run.Response()
	out := make([]state.Item, 0, b.OutputsEnd-b.Start)
	for seq := b.Start; seq < b.OutputsEnd; seq++ {
		if it, ok := run.ItemAt(seq); ok {
			out = append(out, it)
		}
	}
	return out
}
