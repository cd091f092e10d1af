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
