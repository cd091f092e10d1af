package guardrails

import (
	"context"

	"github.com/turnkit/turnkit/pipeline"
)

// Typed adapts a check of a structured final output to an [Output]
// check: it gets the final output decoded into T, the output type of the
// agent that produced it ([pipeline.Agent.Output]), as well as its text.
//
//	noRefunds := guardrails.Typed(func(ctx context.Context, a *pipeline.Agent, inv Invoice, text string) (guardrails.Verdict, error) {
//		if inv.Total < 0 {
//			return guardrails.Trip("negative total"), nil
//		}
//		return guardrails.Verdict{}, nil
//	})
//	guardrails.Output(noRefunds)
//
// The value is decoded from the text for each check, so a check may not
// share it with another one, and it is the value [pipeline.OutputAs]
// returns for the run. A final output that is not a T (an agent with
// another output type, or none, after a handoff) passes this check
// unchecked: give each output type its own check. The runner decodes the
// output before the guardrails run, so a decoding error here can only come
// from an output type whose Decode is not deterministic; it is the check's
// error.
func Typed[T any](check func(ctx context.Context, agent *pipeline.Agent, out T, text string) (Verdict, error)) Check[string] {
	if check == nil {
		panic("guardrails: Typed called with a nil check")
	}
	return func(ctx context.Context, agent *pipeline.Agent, text string) (Verdict, error) {
		if agent == nil || agent.Output == nil {
			return Verdict{}, nil
		}
		v, err := agent.Output.Decode(text)
		if err != nil {
			return Verdict{}, err
		}
		out, ok := v.(T)
		if !ok {
			return Verdict{}, nil
		}
		return check(ctx, agent, out, text)
	}
}
