// Package readme holds the Go code blocks of the repository's README.md,
// each verbatim inside a func, so that go vet and go test compile them
// (the root TestDocCodeCompiles checks that every block is an excerpt of a
// compiled file). TestChain also runs the chain block offline.
package readme

import (
	"context"
	"log"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"go.opentelemetry.io/otel/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/zap"

	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/middleware/compaction"
	"github.com/turnkit/turnkit/middleware/guardrails"
	"github.com/turnkit/turnkit/middleware/logging"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool"
	"github.com/turnkit/turnkit/tracing"
)

// noSecrets is the README's output guardrail: it trips on a leaked key.
func noSecrets(ctx context.Context, agent *pipeline.Agent, out string) (guardrails.Verdict, error) {
	return guardrails.Verdict{}, nil
}

// TestChain runs the README's chain on the scripted model, in a temporary
// folder (the block opens agent.db in the working directory).
func TestChain(t *testing.T) {
	t.Chdir(t.TempDir())
	ctx := context.Background()
	logger := zap.NewNop()
	agent := &pipeline.Agent{Name: "janitor", Model: scripted.New(scripted.Reply("Done."))}

	store, _ := sqlite.Open("agent.db") // sessions and checkpoints in one file
	// The checkpointer persists the session too (WithSession), its saves ahead of the appends.
	cp := checkpoint.New(store, checkpoint.WithSession(store))
	stack := pipeline.Stack{ // the recommended order, whatever order the places are filled in
		Tracing:    tracing.Middleware(),       // spans: invoke_agent → turn → chat / execute_tool
		Logging:    logging.Middleware(logger), // zap, payloads off by default
		Checkpoint: cp.Middleware(),            // persistence (tool side effects at once, model output after the verdict) and crash-safe checkpoints
		Approval:   approval.Require(approval.ByTool("delete_file")),
		Guardrails: []pipeline.Middleware{guardrails.Output(noSecrets)},
	}
	runner := pipeline.NewRunner(pipeline.WithMiddleware(stack.Middleware()...))
	res, err := runner.Run(ctx, agent, pipeline.UserInput("clean up /tmp"), pipeline.WithSessionID("user-42"))

	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if res.FinalOutput() != "Done." {
		t.Fatalf("final output %q", res.FinalOutput())
	}
	items, err := store.List(ctx, "user-42", 0)
	if err != nil || len(items) != 2 {
		t.Fatalf("session holds %d items (%v), want the input and the answer", len(items), err)
	}
}

func middlewareBlock() pipeline.Middleware {
	timing := pipeline.Middleware{
		Name: "timing",
		Tool: func(next pipeline.ToolHandler) pipeline.ToolHandler {
			return pipeline.ToolHandlerFunc(func(ctx context.Context, c *pipeline.ToolCall) (*pipeline.ToolResult, error) {
				start := time.Now()
				defer func() { log.Printf("%s took %v", c.Name, time.Since(start)) }()
				return next.CallTool(ctx, c)
			})
		},
	}
	return timing
}

// Forecast is the README's weather tool's output.
type Forecast struct {
	City string `json:"city"`
	Sky  string `json:"sky"`
}

func lookup(ctx context.Context, city string) (Forecast, error) {
	return Forecast{City: city, Sky: "clear"}, nil
}

// PlotArgs are the README's plot tool's arguments.
type PlotArgs struct {
	Series []float64 `json:"series"`
}

func toolBlocks(png string) []pipeline.Tool {
	type WeatherArgs struct {
		City string `json:"city" jsonschema:"description=City name, e.g. Oslo"`
	}

	weather := tool.Func("get_weather", "Current weather in a city.",
		func(ctx context.Context, in WeatherArgs) (Forecast, error) { return lookup(ctx, in.City) })

	chart := tool.Func("plot", "Plots a series.",
		func(ctx context.Context, in PlotArgs) (tool.Content, error) {
			return tool.Content{state.TextPart("The chart:"), state.ImageURL("data:image/png;base64,"+png, "auto")}, nil
		})
	return []pipeline.Tool{weather, chart}
}

// Line is a line of the README's order.
type Line struct {
	SKU string `json:"sku"`
	Qty int    `json:"qty"`
}

func outputBlock(ctx context.Context, runner *pipeline.Runner, m pipeline.Model, email string) {
	type Order struct {
		Customer string  `json:"customer"`
		Lines    []Line  `json:"lines" jsonschema:"minItems=1"`
		Deliver  *string `json:"deliver"` // optional: nullable in strict mode
	}

	agent := &pipeline.Agent{Name: "extractor", Model: m, Output: tool.MustOutput[Order]()}
	res, err := runner.Run(ctx, agent, pipeline.UserInput(email))
	order, err := pipeline.OutputAs[Order](res)

	_, _ = order, err
}

func hostedBlock(ctx context.Context, runner *pipeline.Runner, agent *pipeline.Agent, input []state.Item,
	runSQL func(context.Context, string) (string, error), sqlGrammar string) {
	agent.Tools = []pipeline.Tool{
		openai.WebSearch(responses.WebSearchToolParam{}),
		openai.FileSearch(responses.FileSearchToolParam{VectorStoreIDs: []string{"vs_1"}, MaxNumResults: param.NewOpt[int64](5)}),
		openai.CodeInterpreter(responses.ToolCodeInterpreterParam{}), // an automatic container
		openai.ImageGeneration(responses.ToolImageGenerationParam{}),
		openai.MCP(responses.ToolMcpParam{ServerLabel: "deepwiki", ServerURL: param.NewOpt("https://mcp.deepwiki.com/mcp"),
			RequireApproval: responses.ToolMcpRequireApprovalUnionParam{OfMcpToolApprovalSetting: param.NewOpt("always")}}),
		tool.Text("run_sql", "Runs SQL.", runSQL, tool.Grammar("lark", sqlGrammar)), // a custom tool: freeform text in
	}
	runner.Run(ctx, agent, input, openai.ChainResponses()) // or openai.InConversation("conv_…")
}

func tracingBlock(tp *sdktrace.TracerProvider, mp metric.MeterProvider, logger *zap.Logger) {
	tracing.Middleware(tracing.WithTracerProvider(tp), tracing.WithMeterProvider(mp)) // GenAI spans and metrics
	logging.Middleware(logger)                                                        // zap; logging.WithPayloads() to log content
}

// longConversation holds the features page's block on what the model is
// sent in a long conversation; it compiles, and is not run (it needs the
// Responses API).
func longConversation(ctx context.Context, store *sqlite.Store, cheapModel pipeline.Model, agent *pipeline.Agent, input []state.Item, id string) (string, error) {
	runner := pipeline.NewRunner(pipeline.WithMiddleware(
		persistence.Middleware(store, persistence.WithContinuation()),                           // the session remembers where it stands
		compaction.Middleware(compaction.Summarize(cheapModel), compaction.WithMaxTokens(8000)), // or compaction.Middleware(openaiModel, …): /responses/compact
	))
	res, err := runner.Run(ctx, agent, input, pipeline.WithSessionID(id), openai.ChainResponses())
	res.LastResponseID()
	return res.LastResponseID(), err
}

var _ = longConversation
