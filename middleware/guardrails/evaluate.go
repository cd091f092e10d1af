package guardrails

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// named is one check of a guardrail with the name its results carry.
type named[T Subject] struct {
	name  string
	check Check[T]
}

// scope says where a guardrail's results go.
type scope struct {
	run    *state.Run
	stage  state.GuardrailStage
	turn   int
	callID string
	t      *pipeline.Turn       // for the stream's GuardrailChecked events
	emit   func(pipeline.Event) // for them without a turn (a run's input ruled before it is placed)
}

// outcome is what one check came to.
type outcome struct {
	v    Verdict
	info json.RawMessage // v.Info as JSON
	err  error           // the check failed; v is meaningless
	rank int             // completion order, from 1; 0 if it never ran
}

func (o *outcome) stops() bool { return o.err != nil || o.v.Tripwire }

// evaluate runs the checks on subject, records the result of every check
// that reached a verdict in the run (in check order, before it returns, so
// a later failure in the turn cannot lose them), and returns:
//   - a *TripwireError for the first check (in completion order) that
//     tripped, if any did;
//   - else a *CheckError for the first check that failed;
//   - else the first verdict, in check order, whose behavior is not Allow
//     (the zero Verdict if every check allowed).
//
// Several checks run concurrently and the first that trips or fails
// cancels the others; evaluate returns after all of them returned. A panic
// in a check is re-raised on the caller's goroutine.
func evaluate[T Subject](ctx context.Context, checks []named[T], agent *pipeline.Agent, subject T, sc scope) (Verdict, error) {
	var one [1]outcome
	outs := one[:]
	if len(checks) == 1 {
		outs[0] = call(ctx, checks[0].check, agent, subject, sc.stage)
		outs[0].rank = 1
	} else {
		outs = make([]outcome, len(checks))
		runAll(ctx, checks, agent, subject, sc.stage, outs)
	}
	return settle(checks, outs, sc)
}

// call runs one check and validates its verdict for the stage.
func call[T Subject](ctx context.Context, check Check[T], agent *pipeline.Agent, subject T, stage state.GuardrailStage) outcome {
	v, err := check(ctx, agent, subject)
	if err != nil {
		return outcome{err: err}
	}
	if !allowed(stage, v.Behavior) {
		return outcome{err: fmt.Errorf("verdict behavior %s is not allowed at the %s stage", v.Behavior, stage)}
	}
	o := outcome{v: v}
	if v.Info != nil {
		if o.info, err = json.Marshal(v.Info); err != nil {
			return outcome{err: fmt.Errorf("verdict info: %w", err)}
		}
	}
	return o
}

func allowed(stage state.GuardrailStage, b Behavior) bool {
	switch b {
	case 0, Allow:
		return true
	case Reject:
		return stage == state.StageToolInput
	case Replace:
		return stage == state.StageToolOutput
	}
	return false
}

// runAll runs the checks concurrently, each writing only its own slot.
func runAll[T Subject](ctx context.Context, checks []named[T], agent *pipeline.Agent, subject T, stage state.GuardrailStage, outs []outcome) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type done struct {
		i     int
		panic any
	}
	ch := make(chan done, len(checks))
	for i := range checks {
		go func() {
			d := done{i: i}
			defer func() {
				d.panic = recover()
				ch <- d
			}()
			outs[i] = call(cctx, checks[i].check, agent, subject, stage)
		}()
	}
	var panicked any
	for n := 1; n <= len(checks); n++ {
		d := <-ch
		if d.panic != nil {
			if panicked == nil {
				panicked = d.panic
			}
			cancel()
			continue
		}
		outs[d.i].rank = n
		if outs[d.i].stops() {
			cancel()
		}
	}
	if panicked != nil {
		panic(panicked)
	}
}

// settle records the verdicts and decides, as evaluate documents.
func settle[T Subject](checks []named[T], outs []outcome, sc scope) (Verdict, error) {
	trip, fail := -1, -1
	for i := range outs {
		o := &outs[i]
		switch {
		case o.rank == 0:
		case o.err != nil:
			if fail < 0 || o.rank < outs[fail].rank {
				fail = i
			}
		case o.v.Tripwire:
			if trip < 0 || o.rank < outs[trip].rank {
				trip = i
			}
		}
	}
	var (
		act     Verdict
		tripped state.GuardrailResult
	)
	for i := range outs {
		o := &outs[i]
		if o.rank == 0 || o.err != nil {
			continue
		}
		r := state.GuardrailResult{
			Name: checks[i].name, Stage: sc.stage, Turn: sc.turn, CallID: sc.callID,
			Tripped: o.v.Tripwire, Info: o.info,
		}
		if !o.v.Tripwire {
			if sc.stage == state.StageToolInput || sc.stage == state.StageToolOutput {
				r.Behavior = o.v.Behavior.String()
			}
			if o.v.Behavior == Reject || o.v.Behavior == Replace {
				r.Message = o.v.Message
				if act.Behavior == 0 {
					act = o.v
				}
			}
		}
		sc.run.AddGuardrailResult(r)
		if sc.emit != nil {
			sc.emit(pipeline.GuardrailChecked{Result: r})
		} else if sc.t != nil && sc.t.Streaming() {
			sc.t.Emit(pipeline.GuardrailChecked{Result: r})
		}
		if i == trip {
			tripped = r
		}
	}
	if trip >= 0 {
		return Verdict{}, &TripwireError{
			Guardrail: checks[trip].name, Stage: sc.stage, Turn: sc.turn, CallID: sc.callID,
			Info: outs[trip].v.Info, Result: tripped, State: sc.run.Clone(),
		}
	}
	if fail >= 0 {
		return Verdict{}, &CheckError{
			Guardrail: checks[fail].name, Stage: sc.stage, Turn: sc.turn, CallID: sc.callID, Err: outs[fail].err,
		}
	}
	return act, nil
}
