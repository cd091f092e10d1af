package faulty_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/turnkit/turnkit/session/faulty"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
)

// FailAfter makes the second append write and then report an error: the
// caller cannot tell whether it happened, which is what an idempotent
// retry must survive.
func ExampleFailAfter() {
	ctx := context.Background()
	store := faulty.New(memory.New(), faulty.FailAfter(2))
	defer store.Close()

	first := []state.Item{state.UserMessage("hi").WithSeq(1)}
	second := []state.Item{state.AssistantMessage("msg_1", "hello").WithSeq(2)}
	fmt.Println("first:", store.Append(ctx, "s", "run_1", first))
	err := store.Append(ctx, "s", "run_1", second)
	fmt.Println("second failed:", errors.Is(err, faulty.ErrInjected))
	fmt.Println("retry:", store.Append(ctx, "s", "run_1", second))

	items, _ := store.List(ctx, "s", 0)
	fmt.Println("stored:", len(items))
	// Output:
	// first: <nil>
	// second failed: true
	// retry: <nil>
	// stored: 2
}
