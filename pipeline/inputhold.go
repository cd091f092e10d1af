package pipeline

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/state"
)

// An InputHold lets a stage that rules on a run's input decide what of it
// a session may keep: the run's input is then stored only after the model
// stage of the first turn returned (the input checks inside it had their
// say), and a blocked input is stored in the form the ruling gives, or not
// at all. Without a hold, the session middleware stores the input at the
// start of the first turn, before anything can fail.
//
// A guardrail's run stage makes the hold with [HoldInput]; its model stage
// rules with [InputHold.Withhold]; the session middleware finds the hold
// with [InputHoldFrom] and reads the ruling with [InputHold.Ruling]. An
// InputHold is safe for concurrent use.
type InputHold struct {
	mu       sync.Mutex
	withheld bool
	stored   []state.Item
}

type inputHoldKey struct{}

// HoldInput returns a context carrying an input hold for the run served
// under it, and the hold. If ctx already carries one (two guardrails ask
// for it), that one is returned, so every ruling lands in one place.
func HoldInput(ctx context.Context) (context.Context, *InputHold) {
	if h := InputHoldFrom(ctx); h != nil {
		return ctx, h
	}
	h := new(InputHold)
	return context.WithValue(ctx, inputHoldKey{}, h), h
}

// InputHoldFrom returns the input hold ctx carries, or nil.
func InputHoldFrom(ctx context.Context) *InputHold {
	h, _ := ctx.Value(inputHoldKey{}).(*InputHold)
	return h
}

// Withhold rules that the run's input was blocked: the session keeps
// stored in its place (nil: nothing). stored[i] takes the position of the
// run's i-th input item, so it holds at most as many items as the input;
// input items beyond it are not stored. Withhold keeps a copy of stored. A
// later ruling replaces an earlier one, except that a ruling storing
// nothing is never widened.
func (h *InputHold) Withhold(stored []state.Item) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.withheld && h.stored == nil {
		return
	}
	h.withheld = true
	h.stored = nil
	if len(stored) > 0 {
		h.stored = slices.Clone(stored)
	}
}

// Ruling returns what the session may keep of a withheld input, and
// whether the input was withheld at all; an input not withheld is stored
// as it is.
func (h *InputHold) Ruling() (stored []state.Item, withheld bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.stored), h.withheld
}

// WithholdInput takes a blocked input out of the run's state: the input
// placed on the run's first turn ([Turn.Input]) is replaced in t.Run by
// stored, as [InputHold.Withhold] rules for the session (stored[i] at the
// position of the i-th input item, nil: nothing), so the run's state, a
// [*state.Run] handed out with an error, and its next checkpoint save (a
// full one: see [state.Run.Delta]) no longer hold it. t.Input keeps the
// input as placed, for the stages of this turn that store its ruling.
//
// An input guardrail that rules after the input was placed (it reads the
// history, which is loaded on the first turn) calls it from the first
// turn's model stage, before the model is called. It fails on another
// turn, a resumed one, or with more items than the input.
func (t *Turn) WithholdInput(stored []state.Item) error {
	if t.Number != 1 || t.Resumed {
		return fmt.Errorf("pipeline: withhold the input of run %s on turn %d: only the first turn of a run places its input", t.Run.ID(), t.Number)
	}
	return runcore.WithholdInput(t.Run, stored)
}
