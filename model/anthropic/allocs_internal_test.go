package anthropic

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/turnkit/turnkit/pipeline"
)

// TestAllocBudgets pins the allocations of building a request and
// reading a response, as
// bench/budget_test.go pins a turn's: counts do not depend on the
// machine, so a change that allocates more here fails, and raises the
// budget with its reason in the same change. BenchmarkOwnBuild,
// BenchmarkOwnParse and BenchmarkOwnReadStream measure the same work.
func TestAllocBudgets(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	body, stream := []byte(benchReply), benchStream()
	c := &pipeline.ModelCall{}
	m, call := New(sdkClientForBench(), WithModel("claude-sonnet-4-5")), benchCall(10)
	budgets := []struct {
		name   string
		allocs float64
		why    string
		f      func()
	}{
		{"parse", 5, "one string arena, the two items' JSON, their list, the response; 24 with encoding/json, 6 before state's assistant message encoder sized its buffer", func() {
			sinkResp, sinkErr = parseMessage(body, "")
		}},
		{"build", 1, "the body's buffer, sized from the items' JSON; 2 while max_tokens went through fmt.Appendf (boxed)", func() {
			sinkReq, sinkErr = m.build(call)
		}},
		{"read stream", 21, "the test's body and reader (3), the start events' string arenas, the arena of the deltas' texts, the blocks' input, the items; 25 before the reader kept room for two blocks (and their input JSON) in its own allocation; no TextDelta made for a call whose events reach nobody (ModelCall.Streaming), and a delta's text a span of the arena, not a string of its own; 53 before (a text delta's string and its TextDelta, 12 each; an input JSON delta's string, 3), 155 with the SDK's decoder and encoding/json, 106 with encoding/json for the start events, 65 before a delta's escaped string was unescaped by hand and a text block's deltas gathered in a buffer of a few deltas' room", func() {
			dec := newEvents(&http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(stream))})
			sinkResp, sinkErr = readStream(dec, c, "")
			dec.Close()
		}},
	}
	for _, bg := range budgets {
		if got := testing.AllocsPerRun(50, bg.f); got > bg.allocs {
			t.Errorf("%s: %v allocations, over its budget of %v (%s)", bg.name, got, bg.allocs, bg.why)
		}
	}
}
