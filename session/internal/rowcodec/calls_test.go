package rowcodec

import (
	"fmt"
	"testing"

	"github.com/turnkit/turnkit/state"
)

// TestCallsSmallAndLargeBatches checks that a batch read whole (up to
// smallBatch items) and one indexed by ID first give each output the
// latest call of the batch with its ID before it, with reused IDs.
func TestCallsSmallAndLargeBatches(t *testing.T) {
	for _, n := range []int{2, smallBatch / 2, 4 * smallBatch} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			// Rounds of: a call to ID "c<r%3>", its output, a message. The IDs
			// come back every three rounds.
			var items []state.Item
			for seq := int64(1); len(items) < n; seq++ {
				id := fmt.Sprintf("c%d", (seq/3)%3)
				switch seq % 3 {
				case 1:
					items = append(items, state.ToolCall("fc", id, "lookup", `{}`).WithSeq(seq))
				case 2:
					items = append(items, state.ToolOutput(id, "lookup", `"ok"`).WithSeq(seq))
				default:
					items = append(items, state.AssistantMessage("msg", "done").WithSeq(seq))
				}
			}
			// An output whose call is not in the batch (stored earlier).
			items = append(items, state.ToolOutput("elsewhere", "lookup", `"ok"`).WithSeq(int64(len(items))+1))
			ids, batch := Calls(items)
			for i, it := range items {
				switch {
				case it.Kind().IsOutput():
					var want int64
					if it.CallID() != "elsewhere" {
						want = it.Seq() - 1
					}
					if ids[i] == nil || *ids[i] != it.CallID() || batch[i] == nil || *batch[i] != want {
						t.Errorf("item %d (%s): id %v, batch call %v, want %q and %d", i, it, ids[i], batch[i], it.CallID(), want)
					}
				case it.Kind().IsCall():
					if ids[i] == nil || *ids[i] != it.CallID() || batch[i] != nil {
						t.Errorf("item %d (%s): id %v, batch call %v, want %q and none", i, it, ids[i], batch[i], it.CallID())
					}
				default:
					if ids[i] != nil || batch[i] != nil {
						t.Errorf("item %d (%s): id %v, batch call %v, want none", i, it, ids[i], batch[i])
					}
				}
			}
		})
	}
}
