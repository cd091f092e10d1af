package redis

import (
	"encoding/json"
	"testing"

	"github.com/turnkit/turnkit/state"
)

// TestSummaryDocAsJSON checks that appendSummaryDoc writes what
// encoding/json writes for the same summaryDoc, within summaryDocLen.
func TestSummaryDocAsJSON(t *testing.T) {
	for _, sum := range []state.RunSummary{
		{},
		{Agent: "assistant", Turn: 3, Pending: 1, Version: 12},
		{Agent: "<a & \"b\">\n\u2028é\xff", Turn: -1, Pending: 1 << 30, Version: -1 << 62},
	} {
		want, err := json.Marshal(summaryDoc{Agent: sum.Agent, Turn: sum.Turn, Pending: sum.Pending, Version: sum.Version})
		if err != nil {
			t.Fatal(err)
		}
		got := appendSummaryDoc(nil, sum)
		if string(got) != string(want) {
			t.Errorf("appendSummaryDoc(%+v) = %s, want %s", sum, got, want)
		}
		if len(got) > summaryDocLen(sum) {
			t.Errorf("appendSummaryDoc(%+v) wrote %d bytes, summaryDocLen says %d", sum, len(got), summaryDocLen(sum))
		}
	}
}
