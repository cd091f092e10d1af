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
// already stored as the call the output answers. The pointers point into
// one array: three allocations for the batch. A batch of up to
// smallBatch items finds an output's calls by reading the batch; a larger
// one indexes its calls by ID first, and costs O(len(items)) when their
// IDs are distinct.
func Calls(items []state.Item) (callIDs []*string, batchCalls []*int64) {
	callIDs = make([]*string, len(items))
	batchCalls = make([]*int64, len(items))
	cols := make([]struct {
		id     string
		latest int64
	}, len(items))
	var calls map[string][]int64
	if len(items) > smallBatch {
		for _, it := range items {
			if it.Kind().IsCall() {
				if calls == nil {
					calls = make(map[string][]int64)
				}
				calls[it.CallID()] = append(calls[it.CallID()], it.Seq())
			}
		}
	}
	for i, it := range items {
		if !it.Kind().IsCall() && !it.Kind().IsOutput() {
			continue
		}
		c := &cols[i]
		c.id = it.CallID()
		callIDs[i] = &c.id
		if !it.Kind().IsOutput() {
			continue
		}
		if calls != nil {
			for _, seq := range calls[c.id] {
				if seq < it.Seq() {
					c.latest = max(c.latest, seq)
				}
			}
		} else {
			for _, call := range items {
				if call.Kind().IsCall() && call.Seq() < it.Seq() && call.CallID() == c.id {
					c.latest = max(c.latest, call.Seq())
				}
			}
		}
		batchCalls[i] = &c.latest
	}
	return callIDs, batchCalls
}

// smallBatch is the largest batch [Calls] reads whole for each output.
const smallBatch = 16

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
