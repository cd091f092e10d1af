package memory_test

import (
	"context"
	"fmt"

	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
)

func ExampleStore() {
	ctx := context.Background()
	s := memory.New()
	defer s.Close()
	_ = s.Append(ctx, "chat", "run1", []state.Item{state.UserMessage("hi").WithSeq(1)})
	// Appending again is a no-op: appends are idempotent on (run, Seq).
	_ = s.Append(ctx, "chat", "run1", []state.Item{state.UserMessage("hi").WithSeq(1), state.AssistantMessage("", "hello").WithSeq(2)})
	items, _ := s.List(ctx, "chat", 0)
	for _, it := range items {
		fmt.Println(it.Seq(), it.Kind(), it.Text())
	}
	// Output:
	// 1 user_message hi
	// 2 assistant_message hello
}
