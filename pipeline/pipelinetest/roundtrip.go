package pipelinetest

import (
	"testing"

	"github.com/turnkit/turnkit/state"
)

// RoundTrip returns run as another process resuming it would see it: run
// encoded with [state.Marshal] and decoded with [state.Unmarshal]. It fails
// tb, with the encoded checkpoint, if either step fails. run is not
// changed, and the result shares nothing with it.
func RoundTrip(tb testing.TB, run *state.Run) *state.Run {
	tb.Helper()
	data, err := state.Marshal(run)
	if err != nil {
		tb.Fatalf("pipelinetest: RoundTrip: state.Marshal: %v", err)
	}
	back, err := state.Unmarshal(data)
	if err != nil {
		tb.Fatalf("pipelinetest: RoundTrip: state.Unmarshal: %v\n%s", err, data)
	}
	return back
}
