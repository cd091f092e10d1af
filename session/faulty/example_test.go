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

// OfKind aims a fault at the first append that holds an assistant
// message, whichever append that turns out to be: no calibration run.
func ExampleFault_OfKind() {
	ctx := context.Background()
	store := faulty.New(memory.New(), faulty.FailBefore(1).OfKind(state.KindAssistantMessage).InRun("run_1"))
	defer store.Close()

	fmt.Println(store.Append(ctx, "s", "run_1", []state.Item{state.UserMessage("hi").WithSeq(1)}))
	fmt.Println(store.Append(ctx, "s", "run_1", []state.Item{state.AssistantMessage("msg_1", "hello").WithSeq(2)}))
	fmt.Println(store.Append(ctx, "s", "run_1", []state.Item{state.AssistantMessage("msg_1", "hello").WithSeq(2)}))
	// Output:
	// <nil>
	// faulty: append 2 (session "s" run run_1 seq 2): injected before_write failure
	// <nil>
}
