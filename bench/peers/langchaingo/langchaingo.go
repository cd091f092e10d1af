// Package langchaingo runs turnkit's run scenario on langchaingo
// (github.com/tmc/langchaingo), the way a user would build it: a fake model
// of its llms.Model interface, a trivial tools.Tool, an
// agents.OpenAIFunctionsAgent (the agent that uses the model's native tool
// calls) in an agents.Executor allowed enough iterations for the run, and
// one chains.Call per run.
//
// It is a module of its own, so that langchaingo's dependencies reach
// neither turnkit nor the other peers.
package langchaingo

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"testing"

	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/tools"
)

// ToolName is the trivial tool's name, as in turnkit's scenarios
// (bench/internal/scenario).
const ToolName = "echo"

// Model is a fake langchaingo model for a run of Turns tool turns: while
// the input holds fewer than Turns tool results it answers with one call to
// the trivial tool, then with a final message. It reads only len(messages),
// so its own cost does not grow with the history.
//
// Each call's arguments name its turn ({"__arg1":"3"}). The executor's
// OpenAIFunctionsAgent rebuilds the history from its steps and merges
// consecutive steps whose log line is the same, and the log line is made
// of the tool's name and arguments: with identical arguments every turn, the
// model would be shown one assistant message with all the calls so far as
// parallel calls (see TestIdenticalCallsAreMergedIntoOneMessage), which is
// not the scenario.
type Model struct {
	Turns int
}

var _ llms.Model = (*Model)(nil)

// history is the number of messages before the first turn: the agent's
// system message and the user's.
const history = 2

// GenerateContent answers one model call.
func (m *Model) GenerateContent(ctx context.Context, messages []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// messages are the system and user messages, then an assistant call and a tool result per turn.
	done := (len(messages) - history) / 2
	if done >= m.Turns {
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "done", StopReason: "stop"}}}, nil
	}
	n := strconv.Itoa(done + 1)
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{
		StopReason: "tool_calls",
		ToolCalls: []llms.ToolCall{{
			ID: "call_" + n, Type: "function",
			FunctionCall: &llms.FunctionCall{Name: ToolName, Arguments: `{"__arg1":"` + n + `"}`},
		}},
	}}}, nil
}

// Call is langchaingo's deprecated single-prompt interface; the agent does
// not use it.
func (m *Model) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

// Tool is the trivial tool: it ignores its input and returns "ok".
type Tool struct{}

var _ tools.Tool = Tool{}

// Name is the tool's name.
func (Tool) Name() string { return ToolName }

// Description describes the tool.
func (Tool) Description() string { return "Returns ok." }

// Call returns "ok".
func (Tool) Call(context.Context, string) (string, error) { return "ok", nil }

// NewExecutor builds the agent and its executor for runs of the given
// number of tool turns: the executor makes one model call per iteration, so
// it needs turns+1 of them (its default is 5).
func NewExecutor(turns int) *agents.Executor {
	agent := agents.NewOpenAIFunctionsAgent(&Model{Turns: turns}, []tools.Tool{Tool{}})
	return agents.NewExecutor(agent, agents.WithMaxIterations(turns+5), agents.WithReturnIntermediateSteps())
}

// Run runs one run on e and checks that it ended with the final message.
// It returns the executor's outputs: "output" and the intermediate steps.
func Run(ctx context.Context, e *agents.Executor) (map[string]any, error) {
	out, err := chains.Call(ctx, e, map[string]any{"input": "go"})
	if err != nil {
		return nil, err
	}
	if got := out["output"]; got != "done" {
		return out, fmt.Errorf("langchaingo: the run ended with %q, want the final message", got)
	}
	return out, nil
}

// Bench times whole runs of turns tool turns, one run per iteration, on an
// executor built once, outside the timer.
func Bench(b *testing.B, turns int) {
	ctx := context.Background()
	e := NewExecutor(turns)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Run(ctx, e); err != nil {
			b.Fatal(err)
		}
	}
}

// Version returns the langchaingo module version this binary was built
// with.
func Version() (string, error) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "", errors.New("langchaingo: no build info")
	}
	for _, d := range info.Deps {
		if d.Path == "github.com/tmc/langchaingo" {
			return d.Version, nil
		}
	}
	return "", errors.New("langchaingo: github.com/tmc/langchaingo is not among the build's dependencies")
}
