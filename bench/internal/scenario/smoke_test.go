package scenario_test

import (
	"context"
	"flag"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/turnkit/turnkit/bench/internal/scenario"
	"github.com/turnkit/turnkit/pipeline"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// requireBackends reports whether a scenario that cannot run is a failure:
// in CI, or when TURNKIT_REQUIRE_BACKENDS=1 asks for every backend.
func requireBackends() bool {
	return os.Getenv("CI") == "true" || os.Getenv("TURNKIT_REQUIRE_BACKENDS") == "1"
}

// withBenchtime runs f with -test.benchtime set to n iterations, so that
// testing.Benchmark runs each scenario exactly n times.
func withBenchtime(t *testing.T, n int, f func()) {
	t.Helper()
	fl := flag.Lookup("test.benchtime")
	if fl == nil {
		t.Fatal("the test.benchtime flag is not registered")
	}
	old := fl.Value.String()
	if err := flag.Set("test.benchtime", strconv.Itoa(n)+"x"); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = flag.Set("test.benchtime", old) }()
	f()
}

// TestScenariosRunOnce runs every scenario for one iteration, so the
// benchmarks keep compiling and working inside `go test ./...` without
// costing CI a benchmark run.
func TestScenariosRunOnce(t *testing.T) {
	withBenchtime(t, 1, func() {
		for _, s := range scenario.All() {
			if s.Skip != "" {
				if requireBackends() {
					t.Errorf("%s cannot run: %s (CI=true or TURNKIT_REQUIRE_BACKENDS=1 require it)", s.Name, s.Skip)
				} else {
					t.Logf("%s: skipped: %s", s.Name, s.Skip)
				}
				continue
			}
			if (s.Group == "crashsafe" || s.Group == "sealed") && !strings.HasSuffix(s.Name, "/history=10") {
				// The larger histories differ only in their setup (writing
				// 1 000 or 10 000 items to a real store), which under -race
				// would cost CI minutes; turnbench runs them.
				continue
			}
			if s.PerOp < 1 || s.Unit == "" || s.Group == "" {
				t.Errorf("%s: PerOp %d, Unit %q, Group %q: want PerOp ≥ 1 and both named", s.Name, s.PerOp, s.Unit, s.Group)
			}
			res := testing.Benchmark(s.Bench)
			if res.N != 1 {
				t.Errorf("%s: ran %d iterations, want 1 (a failed benchmark runs 0)", s.Name, res.N)
			}
		}
	})
}

// TestScenarioBaselinesExist checks that every ratio has a baseline to be
// taken against.
func TestScenarioBaselinesExist(t *testing.T) {
	names := map[string]bool{}
	for _, s := range scenario.All() {
		if names[s.Name] {
			t.Errorf("two scenarios are named %s", s.Name)
		}
		names[s.Name] = true
	}
	for _, s := range scenario.All() {
		if s.Baseline != "" && !names[s.Baseline] {
			t.Errorf("%s: baseline %s is not a scenario", s.Name, s.Baseline)
		}
	}
}

// TestRunnerTurnsTimesOneTurnPerIteration checks the accounting of the turn
// scenarios: n iterations are exactly n tool turns, plus the untimed final
// turn of each state the scenario used up.
func TestRunnerTurnsTimesOneTurnPerIteration(t *testing.T) {
	hist := scenario.MakeHistory(10)
	perRun := scenario.TurnsPerRun(len(hist))
	n := 2*perRun + perRun/2 // three states: two used up, one cut short by b.Loop
	runs := (n + perRun - 1) / perRun
	var turns, tools, models atomic.Int64
	count := pipeline.Middleware{
		Name: "count",
		Turn: func(next pipeline.Handler) pipeline.Handler {
			return pipeline.HandlerFunc(func(ctx context.Context, tu *pipeline.Turn) error {
				turns.Add(1)
				return next.ServeTurn(ctx, tu)
			})
		},
		Model: func(next pipeline.Model) pipeline.Model {
			return pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
				models.Add(1)
				if got := c.Input.Len(); got < len(hist)+1 || got > len(hist)+1+2*perRun {
					t.Errorf("model input has %d items, want between %d and %d", got, len(hist)+1, len(hist)+1+2*perRun)
				}
				return next.Respond(ctx, c)
			})
		},
		Tool: func(next pipeline.ToolHandler) pipeline.ToolHandler {
			return pipeline.ToolHandlerFunc(func(ctx context.Context, c *pipeline.ToolCall) (*pipeline.ToolResult, error) {
				tools.Add(1)
				return next.CallTool(ctx, c)
			})
		},
	}
	var res testing.BenchmarkResult
	withBenchtime(t, n, func() {
		res = testing.Benchmark(func(b *testing.B) { scenario.RunnerTurns(b, hist, pipeline.WithMiddleware(count)) })
	})
	if res.N != n {
		t.Fatalf("ran %d iterations, want %d", res.N, n)
	}
	if got := tools.Load(); got != int64(n) {
		t.Errorf("%d iterations ran %d tool calls, want one per iteration", n, got)
	}
	if got, want := turns.Load(), int64(n+runs); got != want {
		t.Errorf("%d iterations served %d turns, want %d (one per iteration and one final turn per state)", n, got, want)
	}
	if got, want := models.Load(), int64(n+runs); got != want {
		t.Errorf("%d iterations made %d model calls, want %d", n, got, want)
	}
}
