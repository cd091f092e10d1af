package compaction

import (
	"context"
	"fmt"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// A Compactor writes the items that stand for head, the older part of a
// model call's input (c is the call being made, for its model settings and
// run). It returns new items, in the order the model is to see them, or an
// error, which fails the model call. Implementations must be safe for
// concurrent use.
type Compactor interface {
	Compact(ctx context.Context, c *pipeline.ModelCall, head state.Items) ([]state.Item, error)
}

// CompactorFunc adapts a function to a [Compactor].
type CompactorFunc func(ctx context.Context, c *pipeline.ModelCall, head state.Items) ([]state.Item, error)

// Compact calls f(ctx, c, head).
func (f CompactorFunc) Compact(ctx context.Context, c *pipeline.ModelCall, head state.Items) ([]state.Item, error) {
	return f(ctx, c, head)
}

// Middleware returns the compaction middleware: on every model call whose
// input passes the threshold ([WithMaxItems], [WithMaxTokens]), it
// replaces the input's head with what comp writes, keeps the last items
// ([WithKeep]) as they are, and records the cut in the run's state (see
// the package documentation). A call under the threshold passes through
// untouched. A compactor's error fails the call with a [*Error].
//
// Middleware panics if comp is nil or if no threshold is set. The
// middleware is safe for concurrent use.
func Middleware(comp Compactor, opts ...Option) pipeline.Middleware {
	if comp == nil {
		panic("compaction: Middleware called with a nil Compactor")
	}
	cfg := newConfig(opts)
	if cfg.maxItems == 0 && cfg.maxTokens == 0 {
		panic("compaction: Middleware needs WithMaxItems or WithMaxTokens")
	}
	return pipeline.Middleware{
		Name: "compaction",
		Model: func(next pipeline.Model) pipeline.Model {
			return &model{next: next, comp: comp, cfg: cfg}
		},
	}
}

type model struct {
	next pipeline.Model
	comp Compactor
	cfg  *config
}

var _ pipeline.Model = (*model)(nil)

// Respond compacts c's input when it passes the threshold, then calls the
// next model stage.
func (m *model) Respond(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
	if c.Turn == nil || c.Turn.Run == nil || !m.cfg.over(c.Input) {
		return m.next.Respond(ctx, c)
	}
	if err := m.compact(ctx, c); err != nil {
		return nil, err
	}
	return m.next.Respond(ctx, c)
}

// compact replaces c's input's head and records the new view in the run.
func (m *model) compact(ctx context.Context, c *pipeline.ModelCall) error {
	run := c.Turn.Run
	old, _, err := pipeline.ViewOf(run)
	if err != nil {
		return &Error{RunID: run.ID(), Turn: c.Turn.Number, Err: err}
	}
	if old == nil {
		old = &pipeline.View{}
	}
	in := c.Input
	cut := Cut(in, in.Len()-m.cfg.keepFor(in))
	if cut <= len(old.Items) {
		return nil // nothing but the last compaction's items to compact
	}
	items, err := m.comp.Compact(ctx, c, sliceItems(in, 0, cut))
	if err != nil {
		return &Error{RunID: run.ID(), Turn: c.Turn.Number, Err: err}
	}
	if len(items) == 0 {
		return &Error{RunID: run.ID(), Turn: c.Turn.Number, Err: fmt.Errorf("the compactor returned no items for %d", cut)}
	}
	placed := make([]state.Item, len(items))
	for i, it := range items {
		placed[i] = it.WithSeq(0)
	}
	v := &pipeline.View{
		ID:    fmt.Sprintf("%s/%d", run.ID(), c.Turn.Number),
		Items: placed,
		From:  old.From + cut - len(old.Items),
	}
	v.Covered = pipeline.CoveredDigest(run.ModelInput(), v.From)
	if err := pipeline.SetView(run, v); err != nil {
		return &Error{RunID: run.ID(), Turn: c.Turn.Number, Err: err}
	}
	// A stored response the run would have continued holds the input
	// before the cut, not this one: a chain starts again from the view.
	pipeline.SetContinuation(run, pipeline.Continuation{})
	out := make([]state.Item, 0, len(placed)+in.Len()-cut)
	out = append(out, placed...)
	for _, it := range in.From(cut).All() {
		out = append(out, it)
	}
	c.Input = state.ItemsOf(out)
	return nil
}

// Cut returns the position in in where a boundary may fall at or before
// want: the items from there on are kept whole, so none of them is an
// output whose call lies before it, and the reasoning before a kept item
// is kept with it. It returns 0 when no such position is above 0.
func Cut(in state.Items, want int) int {
	cut := min(max(want, 0), in.Len())
	for cut > 0 {
		moved := false
		// An output kept without its call (a call ID may come again in a
		// later response: the output answers the latest call before it)
		// keeps the call: the cut moves back to it.
		inTail := map[string]bool{}
		for i := cut; i < in.Len() && !moved; i++ {
			it := in.At(i)
			switch {
			case it.Kind().IsCall():
				inTail[it.CallID()] = true
			case it.Kind().IsOutput() && !inTail[it.CallID()]:
				for j := cut - 1; j >= 0; j-- {
					if c := in.At(j); c.Kind().IsCall() && c.CallID() == it.CallID() {
						cut, moved = j, true
						break
					}
				}
			}
		}
		// Reasoning goes with the item after it.
		for cut > 0 && in.At(cut-1).Kind() == state.KindReasoning {
			cut, moved = cut-1, true
		}
		if !moved {
			return cut
		}
	}
	return 0
}

// sliceItems returns in[from:to] as a view.
func sliceItems(in state.Items, from, to int) state.Items {
	out := make([]state.Item, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, in.At(i))
	}
	return state.ItemsOf(out)
}

// EstimateTokens estimates the tokens of items as a quarter of their JSON
// length, the usual rule of thumb for English text.
func EstimateTokens(items state.Items) int {
	n := 0
	for _, it := range items.All() {
		n += it.RawLen()
	}
	return (n + 3) / 4
}
