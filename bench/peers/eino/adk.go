package eino

import (
	"context"
	"fmt"
	"testing"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
)

// NewADKRunner builds the agent eino's documentation recommends, the ADK
// ChatModelAgent (adk.NewChatModelAgent) with the same fake model and tool
// as the ReAct agent, and its adk.Runner (no checkpoint store, no
// streaming), for runs of the given number of tool turns.
func NewADKRunner(ctx context.Context, turns int) (*adk.Runner, error) {
	agent, err := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{
		Name:        "bench",
		Description: "turnkit's run scenario",
		Model:       &Model{Turns: turns},
		ToolsConfig: adk.ToolsConfig{
			ToolsNodeConfig: compose.ToolsNodeConfig{Tools: []tool.BaseTool{Tool{}}},
		},
		MaxIterations: turns + 5, // model calls: one per turn and the final one
	})
	if err != nil {
		return nil, err
	}
	return adk.NewRunner(ctx, adk.RunnerConfig{Agent: agent}), nil
}

// ADKRun is what one run of the ADK agent produced.
type ADKRun struct {
	ToolOutputs int    // tool-result events
	Final       string // the content of the last assistant message
}

// RunADK runs one run on r, reading every event as a user of adk.Runner
// does, and checks that it ended with the final message.
func RunADK(ctx context.Context, r *adk.Runner) (ADKRun, error) {
	var run ADKRun
	it := r.Run(ctx, []adk.Message{schema.UserMessage("go")})
	for {
		ev, ok := it.Next()
		if !ok {
			break
		}
		if ev.Err != nil {
			return run, ev.Err
		}
		if ev.Output == nil || ev.Output.MessageOutput == nil {
			continue
		}
		switch mo := ev.Output.MessageOutput; mo.Role {
		case schema.Tool:
			run.ToolOutputs++
		case schema.Assistant:
			if mo.Message != nil {
				run.Final = mo.Message.Content
			}
		}
	}
	if run.Final != "done" {
		return run, fmt.Errorf("eino adk: the run ended with %q, want the final message", run.Final)
	}
	return run, nil
}

// BenchADK times whole runs of turns tool turns on the ADK agent, one run
// per iteration, on an agent and runner built once, outside the timer.
func BenchADK(b *testing.B, turns int) {
	ctx := context.Background()
	r, err := NewADKRunner(ctx, turns)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := RunADK(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}
