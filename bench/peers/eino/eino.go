// Package eino runs turnkit's run scenario on github.com/cloudwego/eino's
// ReAct agent (flow/agent/react), the way a user would build it: a fake
// model of eino's own model.ToolCallingChatModel interface, a trivial
// tool.InvokableTool, react.NewAgent, Agent.Generate.
package eino

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"testing"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
)

// ToolName is the trivial tool's name, as in turnkit's scenarios
// (bench/internal/scenario).
const ToolName = "echo"

// Model is a fake eino chat model for a run of Turns tool turns: while the
// input holds fewer than Turns tool results it answers with one call to
// the trivial tool, then with a final message. It reads only len(input),
// so its own cost does not grow with the history.
type Model struct {
	Turns int
}

var _ model.ToolCallingChatModel = (*Model)(nil)

// Generate answers one model call.
func (m *Model) Generate(ctx context.Context, input []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// input is the user message, then an assistant call and a tool result per turn.
	done := (len(input) - 1) / 2
	if done >= m.Turns {
		return schema.AssistantMessage("done", nil), nil
	}
	id := "call_" + strconv.Itoa(done+1)
	return schema.AssistantMessage("", []schema.ToolCall{{
		ID: id, Type: "function", Function: schema.FunctionCall{Name: ToolName, Arguments: "{}"},
	}}), nil
}

// Stream answers one model call as a stream of one message.
func (m *Model) Stream(ctx context.Context, input []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, input, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{msg}), nil
}

// WithTools returns the model itself: the fake ignores the tool list.
func (m *Model) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return m, nil }

// Tool is the trivial tool: it ignores its arguments and returns "ok".
type Tool struct{}

var _ tool.InvokableTool = Tool{}

// Info describes the tool.
func (Tool) Info(context.Context) (*schema.ToolInfo, error) {
	return &schema.ToolInfo{Name: ToolName, Desc: "Returns ok.", ParamsOneOf: schema.NewParamsOneOfByParams(map[string]*schema.ParameterInfo{})}, nil
}

// InvokableRun returns "ok".
func (Tool) InvokableRun(context.Context, string, ...tool.Option) (string, error) { return "ok", nil }

// NewAgent builds the ReAct agent for runs of the given number of tool
// turns.
func NewAgent(ctx context.Context, turns int) (*react.Agent, error) {
	return react.NewAgent(ctx, &react.AgentConfig{
		ToolCallingModel: &Model{Turns: turns},
		ToolsConfig:      compose.ToolsNodeConfig{Tools: []tool.BaseTool{Tool{}}},
		MaxStep:          2*turns + 5, // a model and a tools step per turn, and the final model step
	})
}

// Run runs one run on agent and checks that it ended with the final
// message.
func Run(ctx context.Context, agent *react.Agent) error {
	out, err := agent.Generate(ctx, []*schema.Message{schema.UserMessage("go")})
	if err != nil {
		return err
	}
	if out.Content != "done" {
		return fmt.Errorf("eino: the run ended with %q, want the final message", out.Content)
	}
	return nil
}

// Bench times whole runs of turns tool turns, one run per iteration, on an
// agent built once, outside the timer.
func Bench(b *testing.B, turns int) {
	ctx := context.Background()
	agent, err := NewAgent(ctx, turns)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := Run(ctx, agent); err != nil {
			b.Fatal(err)
		}
	}
}

// Version returns the eino module version this binary was built with.
func Version() (string, error) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "", errors.New("eino: no build info")
	}
	for _, d := range info.Deps {
		if d.Path == "github.com/cloudwego/eino" {
			return d.Version, nil
		}
	}
	return "", errors.New("eino: github.com/cloudwego/eino is not among the build's dependencies")
}
