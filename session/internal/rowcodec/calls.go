package rowcodec

import (
	"fmt"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// Calls returns, for each item of a batch, the columns that keep a call's
// outputs unique (see [session.Store]): its call ID (nil unless it is a
// call or an output), and for an output the position of the latest call
// of the batch with its ID placed before it, or 0 (nil unless it is an
// output). The store takes the greater of that and the latest such call
// already stored as the call the output answers. It costs O(len(items))
// for batches whose call IDs are distinct.
func Calls(items []state.Item) (callIDs []*string, batchCalls []*int64) {
	callIDs = make([]*string, len(items))
	batchCalls = make([]*int64, len(items))
	var calls map[string][]int64
	for _, it := range items {
		if it.Kind().IsCall() {
			if calls == nil {
				calls = make(map[string][]int64)
			}
			calls[it.CallID()] = append(calls[it.CallID()], it.Seq())
		}
	}
	for i, it := range items {
		if !it.Kind().IsCall() && !it.Kind().IsOutput() {
			continue
		}
		id := it.CallID()
		callIDs[i] = &id
		if it.Kind().IsOutput() {
			var latest int64
			for _, c := range calls[id] {
				if c < it.Seq() {
					latest = max(latest, c)
				}
			}
			batchCalls[i] = &latest
		}
	}
	return callIDs, batchCalls
}

// DuplicateOutput returns the error for an append that gives a call a
// second output; it wraps [session.ErrDuplicateOutput].
func DuplicateOutput(pkg, sessionID, runID string, items []state.Item) error {
	var outputs []string
	for _, it := range items {
		if it.Kind().IsOutput() {
			outputs = append(outputs, it.String())
		}
	}
	return fmt.Errorf("%s: append to session %q run %q: one of %v answers a call that has its output at another position: %w",
		pkg, sessionID, runID, outputs, session.ErrDuplicateOutput)
}
