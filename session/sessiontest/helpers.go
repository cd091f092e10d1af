package sessiontest

import "github.com/turnkit/turnkit/state"

// Batch returns the i-th append of a benchmark run: three items (a tool
// call, its output and the assistant's message) at Seq 3i+1 to 3i+3. Each
// call builds new items.
func Batch(i int64) []state.Item {
	return []state.Item{
		state.ToolCall("fc", "call", "lookup", `{"q":"weather in Paris"}`).WithSeq(3*i + 1),
		state.ToolOutput("call", "lookup", `{"temp_c":18,"sky":"clear"}`).WithSeq(3*i + 2),
		state.AssistantMessage("msg", "It is 18°C and clear in Paris.").WithSeq(3*i + 3),
	}
}
