package bench_test

import (
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/turnkit/turnkit/bench/internal/scenario"
)

// The MCP scenarios start servers and connections; none may outlive its
// benchmark.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// runGroup runs the scenarios of a group as sub-benchmarks named without
// the group prefix, skipping those that cannot run here.
func runGroup(b *testing.B, group string) {
	for _, s := range scenario.Group(group) {
		b.Run(strings.TrimPrefix(s.Name, group+"/"), func(b *testing.B) {
			if s.Skip != "" {
				b.Skip(s.Skip)
			}
			s.Bench(b)
		})
	}
}

// BenchmarkTurn is the per-turn cost of the bare loop, the Runner, and the
// Runner with five pass-through middleware, at 10, 1 000 and 10 000 items
// of history; one turn per iteration.
func BenchmarkTurn(b *testing.B) { runGroup(b, "turn") }

// BenchmarkRun is the cost of whole runs of 10, 100 and 1 000 tool turns,
// the scenario the peers repeat; divide ns/op by the number of turns.
func BenchmarkRun(b *testing.B) { runGroup(b, "run") }

// BenchmarkMiddleware is the per-turn cost of each middleware alone and of
// the full default chain (tracing with no provider, logging to zap.NewNop,
// persistence on session/memory, approval with nothing gated, an input and
// an output guardrail).
func BenchmarkMiddleware(b *testing.B) { runGroup(b, "middleware") }

// BenchmarkPolicies is the per-turn cost of the full default chain with
// issue 30's policies configured but not triggered (retries and fallback,
// a tool timeout, a budget, a conditional tool), each alone and all at
// once, against the chain without them.
func BenchmarkPolicies(b *testing.B) { runGroup(b, "policies") }

// BenchmarkCheckpoint is state.Marshal and state.Unmarshal at 10, 100 and
// 1 000 items, against encoding/json of the items alone.
func BenchmarkCheckpoint(b *testing.B) { runGroup(b, "checkpoint") }

// BenchmarkApproval is the approval cycle: interrupt → marshal → unmarshal
// → approve → resume.
func BenchmarkApproval(b *testing.B) { runGroup(b, "approval") }

// BenchmarkCrashSafe times a turn of the crash-safe chain against
// persistence alone on each backend.
func BenchmarkCrashSafe(b *testing.B) { runGroup(b, "crashsafe") }

// BenchmarkSealed times a crash-safe turn on SQLite without and with
// encryption at rest, one after the other (bench/internal/scenario's
// sealed group).
func BenchmarkSealed(b *testing.B) { runGroup(b, "sealed") }

// BenchmarkMCP is one call of an echo tool: as a plain function tool, and
// as an MCP tool in process (in-memory transport) and over stdio (the
// reference server, when node and the package are installed).
func BenchmarkMCP(b *testing.B) { runGroup(b, "mcp") }
