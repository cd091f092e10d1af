package genkit_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/firebase/genkit/go/ai"

	"github.com/turnkit/turnkit/bench/peers/genkit"
)

// TestRunMakesOneToolCallPerTurn checks that the scenario is the one turnkit
// runs: turns tool turns, each one model call and one tool result, then
// the final message.
func TestRunMakesOneToolCallPerTurn(t *testing.T) {
	for _, turns := range []int{1, 3, 10} {
		t.Run(strconv.Itoa(turns), func(t *testing.T) {
			ctx := context.Background()
			a := genkit.NewAgent(ctx, turns)
			for range 2 { // genkit is reused across runs, as in the benchmark
				resp, err := a.Run(ctx)
				if err != nil {
					t.Fatal(err)
				}
				var calls, results int
				for _, m := range resp.History() {
					for _, p := range m.Content {
						switch {
						case p.IsToolRequest():
							calls++
						case p.IsToolResponse():
							results++
							if m.Role != ai.RoleTool {
								t.Errorf("a tool result in a %s message", m.Role)
							}
						}
					}
				}
				if calls != turns || results != turns {
					t.Fatalf("the run made %d calls and %d results, want %d of each", calls, results, turns)
				}
			}
		})
	}
}

func BenchmarkRun(b *testing.B) {
	for _, turns := range []int{10, 100, 1000} {
		b.Run("turns="+strconv.Itoa(turns), func(b *testing.B) { genkit.Bench(b, turns) })
	}
}
