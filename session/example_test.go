package session_test

import (
	"context"
	"fmt"

	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
)

// Items land at their positions whatever order they are committed in, and
// a retried append changes nothing: the contract every backend keeps.
func Example_orderAndIdempotency() {
	ctx := context.Background()
	store := memory.New()
	defer store.Close()

	user := state.UserMessage("What's 2+2?").WithSeq(1)
	call := state.ToolCall("fc_1", "call_1", "add", `{"a":2,"b":2}`).WithSeq(2)
	output := state.ToolOutput("call_1", "add", "4").WithSeq(3)
	answer := state.AssistantMessage("msg_1", "4.").WithSeq(4)

	// The tool's pair commits first; the input and the answer later.
	_ = store.Append(ctx, "chat", "run_1", []state.Item{call, output})
	_ = store.Append(ctx, "chat", "run_1", []state.Item{user})
	_ = store.Append(ctx, "chat", "run_1", []state.Item{answer})
	// A retry after an ambiguous failure: nothing is duplicated.
	_ = store.Append(ctx, "chat", "run_1", []state.Item{call, output})

	items, _ := store.List(ctx, "chat", 0)
	for _, it := range items {
		fmt.Println(it.Seq(), it.Kind(), it.Text())
	}
	// Output:
	// 1 user_message What's 2+2?
	// 2 tool_call {"a":2,"b":2}
	// 3 tool_output 4
	// 4 assistant_message 4.
}
