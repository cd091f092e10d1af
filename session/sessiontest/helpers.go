package sessiontest

import (
	"os"
	"testing"

	"github.com/turnkit/turnkit/state"
)

// ServerURL returns the value of the environment variable env (such as
// TURNKIT_POSTGRES_URL) that points a backend's tests at a server. Without
// it the test is skipped with a message saying how to start the servers,
// unless CI=true or TURNKIT_REQUIRE_BACKENDS=1, where it fails: a green CI
// cannot hide a skipped backend.
func ServerURL(tb testing.TB, env string) string {
	tb.Helper()
	url := os.Getenv(env)
	if url == "" {
		msg := env + ` is not set; start the servers with eval "$(.ci/services start)"`
		if os.Getenv("CI") == "true" || os.Getenv("TURNKIT_REQUIRE_BACKENDS") == "1" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	return url
}

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
