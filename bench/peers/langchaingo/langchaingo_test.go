package langchaingo_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/schema"
	"github.com/tmc/langchaingo/tools"

	"github.com/turnkit/turnkit/bench/peers/langchaingo"
)

// TestRunMakesOneToolCallPerTurn checks that the scenario is the one turnkit
// runs: turns tool turns, then the final message, and that the model sees
// an assistant call and a tool result per turn.
func TestRunMakesOneToolCallPerTurn(t *testing.T) {
	for _, turns := range []int{1, 3, 10} {
		t.Run(strconv.Itoa(turns), func(t *testing.T) {
			ctx := context.Background()
			e := langchaingo.NewExecutor(turns)
			for range 2 { // the executor is reused across runs, as in the benchmark
				out, err := langchaingo.Run(ctx, e)
				if err != nil {
					t.Fatal(err)
				}
				steps, _ := out["intermediateSteps"].([]schema.AgentStep)
				if len(steps) != turns {
					t.Fatalf("the run took %d steps, want %d", len(steps), turns)
				}
				for i, s := range steps {
					if s.Action.Tool != langchaingo.ToolName || s.Observation != "ok" || s.Action.ToolID != "call_"+strconv.Itoa(i+1) {
						t.Fatalf("step %d = %+v, want call_%d to the tool, answered ok", i, s, i+1)
					}
				}
			}
		})
	}
}

// recorder answers like langchaingo.Model after turns tool calls with the
// same arguments, and records what it was shown at each call.
type recorder struct {
	turns int
	calls int
	seen  [][]llms.MessageContent
}

func (r *recorder) GenerateContent(_ context.Context, messages []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	r.seen = append(r.seen, messages)
	r.calls++
	if r.calls > r.turns {
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "done"}}}, nil
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: []llms.ToolCall{{
		ID: "call_" + strconv.Itoa(r.calls), Type: "function",
		FunctionCall: &llms.FunctionCall{Name: langchaingo.ToolName, Arguments: "{}"},
	}}}}}, nil
}

func (r *recorder) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, r, prompt, opts...)
}

// TestIdenticalCallsAreMergedIntoOneMessage pins the behaviour that
// langchaingo.Model works around (bench/README.md reports it): the
// OpenAIFunctionsAgent rebuilds the history from the executor's steps and
// merges consecutive steps with the same log line, so three sequential
// turns that call the same tool with the same arguments reach the model as
// one assistant message with three parallel calls.
func TestIdenticalCallsAreMergedIntoOneMessage(t *testing.T) {
	r := &recorder{turns: 3}
	agent := agents.NewOpenAIFunctionsAgent(r, []tools.Tool{langchaingo.Tool{}})
	e := agents.NewExecutor(agent, agents.WithMaxIterations(10))
	if _, err := e.Call(context.Background(), map[string]any{"input": "go"}); err != nil {
		t.Fatal(err)
	}
	last := r.seen[len(r.seen)-1]
	// system, user, one assistant message with 3 calls, 3 tool results
	if len(last) != 6 || len(last[2].Parts) != 3 {
		t.Fatalf("the last model call saw %d messages, the third with %d parts; want 6 and 3 (langchaingo's merge changed?)", len(last), len(last[2].Parts))
	}
	for i, p := range last[2].Parts {
		if tc, ok := p.(llms.ToolCall); !ok || tc.ID != "call_"+strconv.Itoa(i+1) {
			t.Fatalf("part %d of the merged message is %#v, want call_%d", i, p, i+1)
		}
	}
}

func BenchmarkRun(b *testing.B) {
	for _, turns := range []int{10, 100, 1000} {
		b.Run("turns="+strconv.Itoa(turns), func(b *testing.B) { langchaingo.Bench(b, turns) })
	}
}
