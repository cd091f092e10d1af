package mcp

import (
	"context"
	"errors"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// WithSampling lets the servers ask the client for model calls (MCP
// sampling, sampling/createMessage), served by agent's model through
// runner: each request is a run of one turn of a copy of agent with no
// tools and no handoffs, the request's system prompt as its instructions
// (the agent's own when the request has none), its maxTokens and
// temperature in the settings, and its messages as the run's input. The
// run's final output is the answer. runner's middleware applies, so the
// request is traced, logged and guarded like any run; give runner no
// session persistence, since a server's request is no turn of the user's
// conversation.
//
// Sampling is off by default: without this option the client does not
// declare the capability, and a server cannot spend the application's
// model budget. The protocol deprecates sampling as of its 2026-07-28
// version; servers of earlier versions still use it.
func WithSampling(runner *pipeline.Runner, agent *pipeline.Agent) Option {
	return optionFunc(func(c *config) {
		c.sampling = func(ctx context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			return sample(ctx, runner, agent, req.Params)
		}
	})
}

// sample serves one sampling request with a run of agent.
func sample(ctx context.Context, runner *pipeline.Runner, agent *pipeline.Agent, p *sdk.CreateMessageParams) (*sdk.CreateMessageResult, error) {
	if p == nil {
		return nil, errors.New("mcp: sampling: request without params")
	}
	input := make([]state.Item, 0, len(p.Messages))
	for i, m := range p.Messages {
		if m == nil {
			return nil, fmt.Errorf("mcp: sampling: message %d is null", i)
		}
		parts, err := contentParts(&sdk.CallToolResult{Content: []sdk.Content{m.Content}})
		if err != nil {
			return nil, fmt.Errorf("mcp: sampling: message %d: %w", i, err)
		}
		switch m.Role {
		case "user":
			input = append(input, state.UserContent(parts...))
		case "assistant":
			text, ok := onlyText(parts)
			if !ok {
				return nil, fmt.Errorf("mcp: sampling: message %d: an assistant message holds %s, not text", i, parts[0].Type())
			}
			input = append(input, state.AssistantMessage("", text))
		default:
			return nil, fmt.Errorf("mcp: sampling: message %d has role %q", i, m.Role)
		}
	}
	a := *agent
	a.Tools, a.Handoffs, a.Output = nil, nil, nil
	if p.SystemPrompt != "" {
		a.Instructions, a.InstructionsFunc = p.SystemPrompt, nil
	}
	if p.MaxTokens > 0 {
		n := p.MaxTokens
		a.Settings.MaxOutputTokens = &n
	}
	if p.Temperature != 0 {
		t := p.Temperature
		a.Settings.Temperature = &t
	}
	res, err := runner.Run(ctx, &a, input, pipeline.WithRunMaxTurns(1))
	if err != nil {
		return nil, fmt.Errorf("mcp: sampling: %w", err)
	}
	return &sdk.CreateMessageResult{
		Content:    &sdk.TextContent{Text: res.FinalOutput()},
		Model:      a.Settings.Model,
		Role:       "assistant",
		StopReason: "endTurn",
	}, nil
}
