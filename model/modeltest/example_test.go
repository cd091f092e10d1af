package modeltest_test

import (
	"fmt"

	"github.com/turnkit/turnkit/model/modeltest"
)

// The cases a harness answers, with the model calls each makes: a harness
// maps each turn to its provider's recorded payload.
func ExampleCases() {
	for _, c := range modeltest.Cases() {
		fmt.Printf("%s: %d turn(s)", c.Name, len(c.Turns))
		if c.Feature != "" {
			fmt.Printf(", needs %s", c.Feature)
		}
		fmt.Println()
	}
	// Output:
	// ToolCall: 2 turn(s)
	// ParallelCalls: 2 turn(s)
	// MessageThenCall: 2 turn(s)
	// StreamEqualsPlain: 2 turn(s)
	// StructuredOutput: 1 turn(s)
	// StructuredOutputInvalid: 1 turn(s)
	// StructuredOutputRefused: 1 turn(s)
	// ImageInput: 1 turn(s), needs image input
	// ImageToolOutput: 2 turn(s), needs image in a tool output
	// Error400: 1 turn(s)
	// Error429: 1 turn(s)
	// Error500: 1 turn(s)
	// CancelMidStream: 1 turn(s)
	// Usage: 2 turn(s)
}
