package pipeline

import (
	"cmp"
	"context"
	"slices"
	"sort"

	"github.com/turnkit/turnkit/state"
)

// A Result is what a run produced. It is detached from the runner: its
// accessors return copies, and [Result.State] returns a new deep copy on
// every call, so two states made from one result share nothing.
type Result struct {
	finalOutput   string
	interruptions []state.Approval
	lastAgent     *Agent
	// lastResponseID is the ID of the last model response of the run's
	// invocation.
	lastResponseID string

	run *state.Run
	// The items this invocation recorded are read from run, not kept twice:
	// every item at a position from since on (0: none, a result that
	// recorded nothing), and early, the items it recorded below since (the
	// outputs a resumed turn gave the calls of the paused response, when
	// since could not start at the first of them: see resumedSince), in
	// record order.
	since int64
	early []state.Item
	// ended is set when the invocation returns, with items, the run's items
	// then: a view detached from what a later invocation of the same run
	// records (a resume of the run given with WithState).
	ended bool
	items state.Items

	// The final output decoded into its agent's output type (nil for
	// text), that agent's name, and the error that stopped the decoding.
	output      any
	outputAgent string
	outputErr   error
}

// FinalOutput returns the run's final output, when it finished: the text
// of the last agent's answer (its JSON, for an agent with an output type;
// see [OutputAs]).
func (r *Result) FinalOutput() string { return r.finalOutput }

// Interruptions returns copies of the calls that wait for a decision, when
// the run paused, in call order.
func (r *Result) Interruptions() []state.Approval { return slices.Clone(r.interruptions) }

// Interrupted reports whether the run paused for decisions.
func (r *Result) Interrupted() bool { return len(r.interruptions) > 0 }

// LastAgent returns the agent that served the last turn.
func (r *Result) LastAgent() *Agent { return r.lastAgent }

// NewItems returns a copy of the items this invocation recorded that the
// run still holds, in position order. An input that an input guardrail
// withheld ([Turn.WithholdInput]) is not among them, as it is not in the
// run's state.
func (r *Result) NewItems() []state.Item {
	if r.since == 0 {
		return nil
	}
	items := r.items
	if !r.ended {
		items = r.run.Items()
	}
	n := items.Len()
	i := sort.Search(n, func(j int) bool { return items.At(j).Seq() >= r.since })
	out := make([]state.Item, 0, len(r.early)+n-i)
	out = append(out, r.early...)
	slices.SortStableFunc(out, func(a, b state.Item) int { return cmp.Compare(a.Seq(), b.Seq()) })
	for ; i < n; i++ {
		out = append(out, items.At(i))
	}
	return out
}

// LastResponseID returns the ID of the last model response the run got in
// this invocation (Run, Resume or Stream), or "" when it made no model call
// or the model gives no IDs. With the Responses API it is what a next
// request's previous_response_id continues; a session with the
// persistence middleware's WithContinuation remembers it by itself.
func (r *Result) LastResponseID() string { return r.lastResponseID }

// Usage returns the run's usage totals.
func (r *Result) Usage() state.Usage { return r.run.Usage() }

// State returns a deep copy of the run's state: what a checkpoint stores
// and [Runner.Resume] continues. Each call returns a new copy.
func (r *Result) State() *state.Run { return r.run.Clone() }

// RunID returns the run's ID.
func (r *Result) RunID() string { return r.run.ID() }

// snapshot returns a copy of r that shares nothing mutable with it or with
// the live run: its run is a deep copy taken now.
func (r *Result) snapshot() *Result {
	c := r.copy()
	c.run = r.run.Clone()
	return c
}

// copy returns a copy of r with its own slices; the run is shared.
func (r *Result) copy() *Result {
	c := *r
	c.interruptions = slices.Clone(r.interruptions)
	c.early = slices.Clone(r.early)
	return &c
}

// streamLoop runs run in its own goroutine and yields its events in order.
// If the consumer stops early, the run's context is cancelled and
// streamLoop waits for it to return, so no goroutine outlives the loop.
func streamLoop(ctx context.Context, yield func(Event, error) bool, run func(context.Context, func(Event)) (*Result, error)) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := make(chan Event)
	done := make(chan struct{})
	var (
		res *Result
		err error
	)
	go func() {
		defer close(done)
		res, err = run(ctx, func(ev Event) {
			select {
			case events <- ev:
			case <-ctx.Done():
			}
		})
	}()
	for {
		select {
		case ev := <-events:
			if !yield(ev, nil) {
				cancel()
				<-done
				return
			}
		case <-done:
			if err != nil {
				yield(nil, err)
				return
			}
			yield(RunCompleted{Result: res}, nil)
			return
		}
	}
}
