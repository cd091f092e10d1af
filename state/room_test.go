package state

import "testing"

// TestRunListsStartWithRoom: a run's items and model calls start with room
// for a few turns (firstItemsRoom, firstCallsRoom) instead of growing
// through lengths 1, 2, 4 and 8, and double after it, except that the
// model calls grow from their first room to nextCallsRoom at once.
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

// TestLongRunListsDouble: a long run's items and model calls double
// whenever they grow, past the 256 elements from which append grows a
// slice by about 1.25×, so that a run of N items has copied them through
// arrays of at most about 4N elements, not 5N to 6N (issue 28: a run of
// 500 tool turns paid 586 bytes a turn in its items' arrays, one of 64
// turns 328).
func TestLongRunListsDouble(t *testing.T) {
	r := NewRun("r", "a")
	r.addInput(UserMessage("go"))
	const turns = 2_000
	itemsRoom, callsRoom := 0, 0 // the elements of every array made
	for turn := 1; turn <= turns; turn++ {
		items, calls := cap(r.items), cap(r.calls)
		b, err := r.placeModelResponse([]Item{ToolCall("fc", "call", "t", `{}`)}, 1, Usage{Requests: 1}, ModelCall{Turn: turn, Agent: "a"})
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := r.recordOutput(ToolOutput("call", "t", "ok").WithSeq(b.End)); err != nil || !ok {
			t.Fatalf("turn %d: record the output: %v, %v", turn, ok, err)
		}
		if got := cap(r.items); got != items {
			itemsRoom += got
			if items >= firstItemsRoom && got < 2*items {
				t.Fatalf("turn %d: the items grew from room for %d to %d, not by doubling", turn, items, got)
			}
		}
		if got := cap(r.calls); got != calls {
			callsRoom += got
			if calls >= nextCallsRoom && got < 2*calls {
				t.Fatalf("turn %d: the model calls grew from room for %d to %d, not by doubling", turn, calls, got)
			}
		}
	}
	if n := len(r.items); itemsRoom > 4*n {
		t.Errorf("%d items were copied through arrays of %d elements in all, more than 4 times as many", n, itemsRoom)
	}
	if n := len(r.calls); callsRoom > 4*n+firstCallsRoom {
		t.Errorf("%d model calls were copied through arrays of %d elements in all, more than 4 times as many", n, callsRoom)
	}
	for i, it := range r.items {
		if it.seq != int64(i+1) {
			t.Fatalf("item %d of %d is at position %d: growing lost or reordered items", i+1, len(r.items), it.seq)
		}
	}
}

// TestFirstInputSharesItems: a fresh run's input is kept in the array of
// its items, not in a list of its own (one allocation a run fewer), and a
// later input still lands after the items without changing them.
func TestFirstInputSharesItems(t *testing.T) {
	in := []Item{UserMessage("go")}
	allocs := testing.AllocsPerRun(100, func() {
		r := NewRun("r", "a")
		r.addInput(in...)
	})
	if allocs > 3 { // the run, the placed copy returned, the items' array
		t.Errorf("a fresh run and its input: %.0f allocations, want 3", allocs)
	}
	r := NewRun("r", "a")
	r.addInput(UserMessage("one"))
	if _, err := r.placeModelResponse([]Item{AssistantMessage("m", "answer")}, 0, Usage{Requests: 1}, ModelCall{Turn: 1, Agent: "a"}); err != nil {
		t.Fatal(err)
	}
	r.addInput(UserMessage("two"))
	var got []string
	for _, it := range r.Input() {
		got = append(got, it.Text())
	}
	if len(got) != 2 || got[0] != "one" || got[1] != "two" {
		t.Errorf("input = %q, want [one two]", got)
	}
	if it, ok := r.ItemAt(2); !ok || it.Text() != "answer" {
		t.Errorf("item 2 = %v, %v, want the answer: the second input wrote over the items", it, ok)
	}
}

// TestDecodedRunHasRoomToResume: a run decoded while paused on a call
// records the call's output and takes its next turn (a model call and a
// response of one item) without growing its items or its model calls,
// each of which was a new array and a copy.
func TestDecodedRunHasRoomToResume(t *testing.T) {
	r := NewRun("r", "a")
	r.addInput(UserMessage("go"))
	b, err := r.placeModelResponse([]Item{ToolCall("fc", "call", "t", `{}`)}, 1, Usage{Requests: 1}, ModelCall{Turn: 1, Agent: "a"})
	if err != nil {
		t.Fatal(err)
	}
	r.turn = 1
	data, err := Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	items, calls := cap(d.items), cap(d.calls)
	if ok, err := d.recordOutput(ToolOutput("call", "t", "ok").WithSeq(b.End)); err != nil || !ok {
		t.Fatalf("record the output: %v, %v", ok, err)
	}
	if _, err := d.placeModelResponse([]Item{AssistantMessage("m", "done")}, 0, Usage{Requests: 1}, ModelCall{Turn: 2, Agent: "a"}); err != nil {
		t.Fatal(err)
	}
	if cap(d.items) != items {
		t.Errorf("the resumed turn grew the decoded items from room for %d to %d (%d items)", items, cap(d.items), len(d.items))
	}
	if cap(d.calls) != calls {
		t.Errorf("the resumed turn grew the decoded model calls from room for %d to %d (%d calls)", calls, cap(d.calls), len(d.calls))
	}
}
