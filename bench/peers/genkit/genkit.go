// Package genkit runs turnkit's run scenario on Firebase Genkit for Go
// (github.com/firebase/genkit/go), the way a user would build it: a plugin
// (api.Plugin) that provides a fake model made with ai.NewModel, a trivial
// tool defined with genkit.DefineTool, and one genkit.Generate per run, whose
// loop calls the tool until the model answers with text.
//
// It is a module of its own, so that genkit's dependencies reach neither
// turnkit nor the other peers.
package genkit

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"testing"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/core/api"
	"github.com/firebase/genkit/go/genkit"
)

// ToolName is the trivial tool's name, as in turnkit's scenarios
// (bench/internal/scenario).
const ToolName = "echo"

// ModelName is the fake model's name in genkit's registry.
const ModelName = "bench/fake"

// Plugin is a genkit model plugin whose one model is a fake for runs of
// Turns tool turns: while the request holds fewer than Turns tool results
// it answers with one call to the trivial tool, then with a final message.
// It reads only len(req.Messages), so its own cost does not grow with the
// history, and, as genkit's own model plugins do (googlegenai, ollama,
// compat_oai, anthropic), it returns the request in the response.
type Plugin struct {
	Turns int
}

var _ api.Plugin = (*Plugin)(nil)

// Name is the plugin's name, the prefix of its model's.
func (*Plugin) Name() string { return "bench" }

// Init returns the plugin's model.
func (p *Plugin) Init(context.Context) []api.Action {
	m := ai.NewModel(ModelName, &ai.ModelOptions{
		Label:    "fake model of turnkit's run scenario",
		Supports: &ai.ModelSupports{Multiturn: true, Tools: true, SystemRole: true},
	}, p.generate)
	return []api.Action{m.(api.Action)}
}

func (p *Plugin) generate(ctx context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The request holds the user message, then a model call and a tool result per turn.
	done := (len(req.Messages) - 1) / 2
	if done >= p.Turns {
		return &ai.ModelResponse{Request: req, Message: ai.NewModelTextMessage("done"), FinishReason: ai.FinishReasonStop}, nil
	}
	call := ai.NewToolRequestPart(&ai.ToolRequest{Name: ToolName, Input: map[string]any{}, Ref: "call_" + strconv.Itoa(done+1)})
	return &ai.ModelResponse{Request: req, Message: ai.NewModelMessage(call), FinishReason: ai.FinishReasonStop}, nil
}

// Agent is genkit set up for runs of a given number of tool turns.
type Agent struct {
	g     *genkit.Genkit
	tool  ai.Tool
	turns int
}

// NewAgent initializes genkit with the plugin and defines the tool, for runs
// of the given number of tool turns.
func NewAgent(ctx context.Context, turns int) *Agent {
	g := genkit.Init(ctx, genkit.WithPlugins(&Plugin{Turns: turns}), genkit.WithDefaultModel(ModelName))
	tool := genkit.DefineTool(g, ToolName, "Returns ok.", func(*ai.ToolContext, struct{}) (string, error) { return "ok", nil })
	return &Agent{g: g, tool: tool, turns: turns}
}

// Run runs one run, genkit.Generate with the tool, and checks that it
// ended with the final message. It returns the response.
func (a *Agent) Run(ctx context.Context) (*ai.ModelResponse, error) {
	resp, err := genkit.Generate(ctx, a.g,
		ai.WithPrompt("go"),
		ai.WithTools(a.tool),
		ai.WithMaxTurns(a.turns+5), // tool turns allowed before genkit gives up
	)
	if err != nil {
		return nil, err
	}
	if got := resp.Text(); got != "done" {
		return resp, fmt.Errorf("genkit: the run ended with %q, want the final message", got)
	}
	return resp, nil
}

// Bench times whole runs of turns tool turns, one run per iteration, on
// genkit initialized once, outside the timer.
func Bench(b *testing.B, turns int) {
	ctx := context.Background()
	a := NewAgent(ctx, turns)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Run(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// Version returns the genkit module version this binary was built with.
func Version() (string, error) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "", errors.New("genkit: no build info")
	}
	for _, d := range info.Deps {
		if d.Path == "github.com/firebase/genkit/go" {
			return d.Version, nil
		}
	}
	return "", errors.New("genkit: github.com/firebase/genkit/go is not among the build's dependencies")
}
