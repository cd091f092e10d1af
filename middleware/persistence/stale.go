package persistence

import (
	"context"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// fresh refuses a resumed state that is behind its run's session: another
// state of the same run (a sibling taken from the same result, a newer
// checkpoint) went on and committed there. It runs before anything of the
// resumption runs, and reads only positions the state has not settled: the
// one after every position the state reserved, and those above the
// watermark.
//
// The session may legitimately hold more than the state knows only where
// the state itself put it or would put it:
//   - an item the state recorded (an append that failed ambiguously, or
//     whose watermark was not saved): the session holds the same item;
//   - the output of a call that is open in the state's current response
//     (a crash after the call's commit, before the state recorded it):
//     the state reserved that position for that call, and the outcome
//     passes the state's own gate, as the tool stage checks again.
//
// Anything else is another state's doing: an item at or beyond the
// state's next free position (the other state asked the model again), a
// different item at a position the state recorded or reserved, or the
// outcome of a call the state holds for a decision it has not made. Each
// is refused with a [*state.StaleError].
func (l *ledger) fresh(ctx context.Context) error {
	run := l.run
	next := run.NextSeq()
	if _, ok, err := l.at(ctx, next); err != nil {
		return err
	} else if ok {
		return l.stale(next, "")
	}
	open := openOutputs(run)
	for seq := run.SessionWatermark() + 1; seq < next; seq++ {
		want, recorded := run.ItemAt(seq)
		got, ok, err := l.at(ctx, seq)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		call, isOut := open[seq]
		switch {
		case recorded && l.ext.excluded(seq):
			return l.stale(seq, "") // output this state discarded
		case recorded:
			if l.ext.withheld(seq) {
				want = withheld(want)
			}
			if !same(got, want) {
				return l.stale(seq, "")
			}
		case !isOut, !got.Kind().IsOutput(), got.CallID() != call.CallID():
			return l.stale(seq, "")
		case undecided(run, call):
			return l.stale(seq, call.CallID())
		}
	}
	return nil
}

// same reports whether the session's item got is the state's item want:
// the same kind, call, name and content. The JSON bytes are not compared:
// a checkpoint that passed through a JSON document store (key order) still
// holds the same items.
func same(got, want state.Item) bool {
	return got.Seq() == want.Seq() && got.Kind() == want.Kind() && got.CallID() == want.CallID() &&
		got.Name() == want.Name() && got.Text() == want.Text()
}

// at returns the item the session holds at position seq of the run.
func (l *ledger) at(ctx context.Context, seq int64) (state.Item, bool, error) {
	it, ok, err := l.h.store.Lookup(ctx, l.sid, l.run.ID(), seq)
	if err != nil {
		return state.Item{}, false, &LoadError{SessionID: l.sid, RunID: l.run.ID(), Seq: seq, Err: err}
	}
	return it, ok, nil
}

// stale returns the error for a session that holds at seq what the state
// cannot account for; callID names the call whose outcome it is when the
// state did not decide it.
func (l *ledger) stale(seq int64, callID string) error {
	return &state.StaleError{RunID: l.run.ID(), SessionID: l.sid, Seq: seq, NextSeq: l.run.NextSeq(), CallID: callID}
}

// openOutputs returns the output positions reserved for the calls of the
// run's current response that have no output recorded, with their calls.
func openOutputs(run *state.Run) map[int64]state.Item {
	b := run.Response()
	out := b.End
	var open map[int64]state.Item
	for seq := b.Start; seq < b.End; seq++ {
		it, ok := run.ItemAt(seq)
		if !ok || !it.Kind().IsCall() {
			continue
		}
		if _, done := run.ItemAt(out); !done {
			if open == nil {
				open = make(map[int64]state.Item)
			}
			open[out] = it
		}
		out++
	}
	return open
}

// undecided reports whether the state holds call for a decision it has not
// made: the call waits for approval, or a nested run it stands for (an
// agent used as a tool) waits for one, without a decision that governs it.
// An outcome of such a call can only come from another state's decision.
func undecided(run *state.Run, call state.Item) bool {
	if a, ok := run.PendingCall(call.CallID()); ok {
		if _, ok := run.DecisionOn(a); !ok {
			return true
		}
	}
	for _, a := range run.PendingOwnedBy(call.CallID()) {
		if _, ok := run.DecisionOn(a); !ok {
			return true
		}
	}
	return false
}

// lookup asks the session whether a resumed call's output is already
// committed: the call ran before a crash, or in an earlier resumption of
// the same state that stopped before its state was saved. If so the
// stored output is the call's result and next is not called, provided the
// outcome passes this state's own gate: a call the state holds for
// approval is reused only under an approval that still matches its
// arguments (a call held for an answer to its server's request for input
// is reused as it is: it ran with the answer). Under a rejection the tool never runs, so next (the approval
// gate) answers again and the session must hold that same answer. An
// outcome the state did not decide, or decided otherwise, is another
// state's: lookup fails with a [*state.StaleError].
func (l *ledger) lookup(ctx context.Context, c *pipeline.ToolCall, next pipeline.ToolHandler) (*pipeline.ToolResult, bool, error) {
	it, ok, err := l.at(ctx, c.OutputSeq)
	if err != nil || !ok {
		return nil, false, err
	}
	if !it.Kind().IsOutput() || it.CallID() != c.CallID {
		return nil, false, l.stale(c.OutputSeq, "")
	}
	run := l.run
	if undecided(run, c.Item) {
		return nil, false, l.stale(c.OutputSeq, c.CallID)
	}
	res := &pipeline.ToolResult{Status: pipeline.ToolCompleted, Output: it.Text(), Content: it.Content()}
	// A call that waited for an answer to its server's request ran with
	// the answer: its stored output is reused as it is.
	if a, ok := run.PendingCall(c.CallID); ok && !a.IsElicitation() {
		d, _, _ := run.DecisionFor(c.Name, c.CallID)
		if err := d.Check(c.CallID, c.Name, c.Arguments); err != nil {
			return nil, false, err
		}
		if d.Verdict != state.Approved {
			r, err := next.CallTool(ctx, c)
			if err != nil {
				return nil, false, err
			}
			if r == nil || (r.Status != pipeline.ToolRejected && r.Status != pipeline.ToolCompleted) || r.Output != it.Text() {
				return nil, false, l.stale(c.OutputSeq, c.CallID)
			}
			res = r
		}
	}
	l.mu.Lock()
	l.mark(c.Item.Seq(), stored) // a call is stored in the same append as its output
	l.mark(c.OutputSeq, stored)
	l.mu.Unlock()
	return res, true, nil
}
