package memory_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
)

func names(items []state.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.String()
	}
	return out
}

func TestLateCommitKeepsRunPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := memory.New()
	t.Cleanup(func() { _ = s.Close() })
	mustAppend(t, s, "r1", state.UserMessage("hi").WithSeq(1), state.ToolCall("", "c1", "f", "{}").WithSeq(3), state.ToolOutput("c1", "f", "x").WithSeq(4))
	mustAppend(t, s, "r2", state.UserMessage("again").WithSeq(1))
	// r1's message, held back, lands before its call, and before r2.
	mustAppend(t, s, "r1", state.AssistantMessage("m", "thinking aloud").WithSeq(2))
	got, err := s.List(ctx, "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1:user_message", "2:assistant_message", "3:tool_call(f)[c1]", "4:tool_output(f)[c1]", "1:user_message"}
	if d := cmp.Diff(want, names(got)); d != "" {
		t.Fatalf("List (-want +got):\n%s", d)
	}
	last, err := s.List(ctx, "s", 2)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want[3:], names(last)); d != "" {
		t.Fatalf("List limit 2 (-want +got):\n%s", d)
	}
}

func TestAppendIdempotentAndAtomic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := memory.New()
	t.Cleanup(func() { _ = s.Close() })
	u := state.UserMessage("hi").WithSeq(1)
	mustAppend(t, s, "r", u)
	mustAppend(t, s, "r", u, state.AssistantMessage("", "a").WithSeq(2))
	err := s.Append(ctx, "s", "r", []state.Item{state.AssistantMessage("", "b").WithSeq(3), state.UserMessage("other").WithSeq(1)})
	if !errors.Is(err, session.ErrConflict) {
		t.Fatalf("conflicting append = %v, want ErrConflict", err)
	}
	got, _ := s.List(ctx, "s", 0)
	if d := cmp.Diff([]string{"1:user_message", "2:assistant_message"}, names(got)); d != "" {
		t.Fatalf("after failed append (-want +got):\n%s", d)
	}
	if _, ok, _ := s.Lookup(ctx, "s", "r", 3); ok {
		t.Fatal("Lookup found an item of a failed append")
	}
	if it, ok, _ := s.Lookup(ctx, "s", "r", 2); !ok || it.Text() != "a" {
		t.Fatalf("Lookup(2) = %v, %v", it, ok)
	}
}

func TestInvalidPopClearClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := memory.New()
	if err := s.Append(ctx, "s", "r", []state.Item{state.UserMessage("no seq")}); !errors.Is(err, session.ErrInvalid) {
		t.Fatalf("append without seq = %v, want ErrInvalid", err)
	}
	mustAppend(t, s, "r", state.UserMessage("a").WithSeq(1), state.UserMessage("b").WithSeq(2))
	it, ok, err := s.Pop(ctx, "s")
	if err != nil || !ok || it.Text() != "b" {
		t.Fatalf("Pop = %v, %v, %v", it, ok, err)
	}
	if _, ok, _ := s.Lookup(ctx, "s", "r", 2); ok {
		t.Fatal("Lookup found a popped item")
	}
	if err := s.Clear(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.List(ctx, "s", 0); len(got) != 0 {
		t.Fatalf("after Clear: %v", got)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.List(cctx, "s", 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("List on cancelled ctx = %v", err)
	}
	_ = s.Close()
	if _, err := s.List(ctx, "s", 0); !errors.Is(err, session.ErrClosed) {
		t.Fatalf("List after Close = %v, want ErrClosed", err)
	}
}

func mustAppend(t *testing.T, s *memory.Store, run string, items ...state.Item) {
	t.Helper()
	if err := s.Append(context.Background(), "s", run, items); err != nil {
		t.Fatalf("Append(%s, %v): %v", run, items, err)
	}
}

// TestOutputsSmallAndLargeBatches checks the one-output-per-call check on
// both of its paths: a turn's batch, scanned, and a batch of more than 16
// items, indexed. In each, a second output for a call (in the batch or
// stored) is refused and nothing is written; outputs of calls with the
// same ID answer the latest call before them.
func TestOutputsSmallAndLargeBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, n := range []int{2, 20} { // calls per batch: 4 and 40 items
		s := memory.New()
		var batch []state.Item
		for i := range n {
			id := "c" + string(rune('a'+i%2)) // two IDs, reused: each output answers the call before it
			seq := int64(2*i + 1)
			batch = append(batch, state.ToolCall("", id, "f", "{}").WithSeq(seq), state.ToolOutput(id, "f", "x").WithSeq(seq+1))
		}
		mustAppend(t, s, "r", batch...)
		// A second output of the last call, in a batch as large.
		last := int64(2 * n)
		dup := append([]state.Item(nil), state.ToolOutput(batch[len(batch)-1].CallID(), "f", "y").WithSeq(last+1))
		for i := range len(batch) - 1 {
			dup = append(dup, state.UserMessage("pad").WithSeq(last+2+int64(i)))
		}
		if err := s.Append(ctx, "s", "r", dup); !errors.Is(err, session.ErrDuplicateOutput) {
			t.Fatalf("%d items: a second output of a stored call = %v, want ErrDuplicateOutput", len(dup), err)
		}
		// Two outputs of one call in the batch itself.
		twice := []state.Item{state.ToolCall("", "cz", "f", "{}").WithSeq(last + 1), state.ToolOutput("cz", "f", "1").WithSeq(last + 2), state.ToolOutput("cz", "f", "2").WithSeq(last + 3)}
		for i := range len(batch) - 3 {
			twice = append(twice, state.UserMessage("pad").WithSeq(last+4+int64(i)))
		}
		if err := s.Append(ctx, "s", "r", twice); !errors.Is(err, session.ErrDuplicateOutput) {
			t.Fatalf("%d items: two outputs of one call = %v, want ErrDuplicateOutput", len(twice), err)
		}
		if got, err := s.List(ctx, "s", 0); err != nil || len(got) != len(batch) {
			t.Fatalf("%d items: the session holds %d items (%v) after refused appends, want %d", len(batch), len(got), err, len(batch))
		}
	}
}

// TestReadChangesAllocatesOnce reads a long session whole and from a
// stamp: each read is one allocation of the items it returns, not a slice
// grown item by item (a cache's full read of a 10 000-item session made
// about 2 MB of garbage that way).
func TestReadChangesAllocatesOnce(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	t.Cleanup(func() { _ = s.Close() })
	for i := range 1000 {
		mustAppend(t, s, "r1", state.UserMessage("hi").WithSeq(int64(i+1)))
	}
	for _, q := range []session.ChangeQuery{{}, {Since: 1, RunID: "r1"}} {
		var n int
		allocs := testing.AllocsPerRun(10, func() {
			ch, err := s.ReadChanges(ctx, "s", q)
			if err != nil {
				t.Fatal(err)
			}
			n = len(ch.Items)
		})
		if n != 1000 {
			t.Fatalf("ReadChanges(%+v) read %d items, want 1000", q, n)
		}
		if allocs > 1 {
			t.Errorf("ReadChanges(%+v) of 1000 items: %.0f allocations, want 1", q, allocs)
		}
	}
}
