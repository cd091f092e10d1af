package state

import "testing"

// TestRunListsStartWithRoom: a run's items and model calls start with room
// for a few turns (firstItemsRoom, firstCallsRoom) instead of growing
// through lengths 1, 2, 4 and 8, and grow as append grows them after it,
// except that the model calls grow from their first room to nextCallsRoom
// at once.
func TestRunListsStartWithRoom(t *testing.T) {
	r := NewRun("r", "a")
	r.addInput(UserMessage("go"))
	if got := cap(r.items); got != firstItemsRoom {
		t.Fatalf("after the input, room for %d items, want %d", got, firstItemsRoom)
	}
	grew, callsGrew := 0, 0
	for turn := 1; len(r.items) < 3*firstItemsRoom; turn++ {
		items, calls := cap(r.items), cap(r.calls)
		call := ToolCall("fc", "call", "t", `{}`)
		b, err := r.placeModelResponse([]Item{call}, 1, Usage{Requests: 1}, ModelCall{Turn: turn, Agent: "a"})
		if err != nil {
			t.Fatal(err)
		}
		if turn == 1 && cap(r.calls) != firstCallsRoom {
			t.Fatalf("after the first model call, room for %d calls, want %d", cap(r.calls), firstCallsRoom)
		}
		if ok, err := r.recordOutput(ToolOutput("call", "t", "ok").WithSeq(b.End)); err != nil || !ok {
			t.Fatalf("turn %d: record the output: %v, %v", turn, ok, err)
		}
		if cap(r.items) != items {
			grew++
		}
		if cap(r.calls) != calls && turn > 1 {
			callsGrew++
			if cap(r.calls) < 2*calls {
				t.Errorf("turn %d: the model calls grew from %d to %d, not by doubling", turn, calls, cap(r.calls))
			}
		}
		if turn == firstCallsRoom+1 && cap(r.calls) != nextCallsRoom {
			t.Errorf("after %d model calls, room for %d, want %d", turn, cap(r.calls), nextCallsRoom)
		}
	}
	if callsGrew != 2 { // 4 -> 16 -> 32
		t.Errorf("the model calls grew %d times over %d calls, want 2", callsGrew, len(r.calls))
	}
	if grew != 2 { // 16 -> 32 -> 64
		t.Errorf("the items grew %d times over %d items, want 2", grew, len(r.items))
	}
	if got := r.Items().Len(); got != len(r.items) {
		t.Errorf("Items() has %d items, the run %d", got, len(r.items))
	}
}
