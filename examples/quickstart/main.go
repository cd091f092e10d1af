// Quickstart runs an agent with two typed tools on the scripted model,
// offline, through the crash-safe chain on the embedded SQLite store
// (sessions and checkpoints in one file), with a timing middleware of its
// own, and prints the run's items in order, what the store kept, and the
// final output.
//
//	go run ./examples/quickstart               # a new SQLite file in a temporary folder
//	go run ./examples/quickstart -db agent.db  # keep it; a second run continues the session
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/turnkit/turnkit/examples/internal/exmodel"
	"github.com/turnkit/turnkit/middleware/checkpoint"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/tool"
)

func main() {
	db := flag.String("db", "", "the SQLite file to keep sessions and checkpoints in (default: a temporary one)")
	flag.Parse()
	path := *db
	if path == "" {
		dir, err := os.MkdirTemp("", "turnkit-quickstart-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "quickstart:", err)
			os.Exit(1)
		}
		defer os.RemoveAll(dir)
		path = filepath.Join(dir, "agent.db")
	}
	if err := run(context.Background(), os.Stdout, path); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// WeatherArgs are the arguments of get_weather.
type WeatherArgs struct {
	City string `json:"city" jsonschema:"description=City name, e.g. Oslo"`
}

// ConvertArgs are the arguments of convert_temperature.
type ConvertArgs struct {
	Celsius float64 `json:"celsius"`
	To      string  `json:"to" jsonschema:"enum=fahrenheit,enum=kelvin"`
}

// Forecast is get_weather's output; the model sees it as JSON.
type Forecast struct {
	City     string  `json:"city"`
	Celsius  float64 `json:"celsius"`
	Sky      string  `json:"sky"`
	Forecast string  `json:"forecast"`
}

func tools() []pipeline.Tool {
	weather := tool.Func("get_weather", "Current weather for a city.",
		func(ctx context.Context, in WeatherArgs) (Forecast, error) {
			return Forecast{City: in.City, Celsius: 18, Sky: "clear", Forecast: "dry all week"}, nil
		})
	convert := tool.Func("convert_temperature", "Converts a Celsius temperature.",
		func(ctx context.Context, in ConvertArgs) (string, error) {
			switch in.To {
			case "fahrenheit":
				return fmt.Sprintf("%.1f°F", in.Celsius*9/5+32), nil
			default:
				return fmt.Sprintf("%.2fK", in.Celsius+273.15), nil
			}
		})
	return []pipeline.Tool{weather, convert}
}

// newModel returns the model the agent runs on: OpenAI's Responses API
// when OPENAI_API_KEY is set (model from OPENAI_MODEL, default gpt-5-mini),
// and otherwise a scripted model that needs no network.
func newModel() pipeline.Model {
	return exmodel.Pick(
		scripted.Respond(
			scripted.Think("I need the weather first."),
			scripted.Call("get_weather", `{"city":"Oslo"}`),
		),
		scripted.Respond(
			scripted.Text("It is 18°C in Oslo; converting for you."),
			scripted.Call("convert_temperature", `{"celsius":18,"to":"fahrenheit"}`),
		),
		scripted.Reply("Oslo is clear and 18°C (64.4°F), dry all week."),
	)
}

// timing is a middleware written for this example: it measures every
// stage of the run and keeps the figures for the report.
type timing struct {
	mu    sync.Mutex
	lines []string
}

func (tm *timing) record(stage string, start time.Time) {
	d := time.Since(start).Round(time.Microsecond)
	tm.mu.Lock()
	tm.lines = append(tm.lines, fmt.Sprintf("%-34s %v", stage, d))
	tm.mu.Unlock()
}

func (tm *timing) middleware() pipeline.Middleware {
	return pipeline.Middleware{
		Name: "timing",
		Turn: func(next pipeline.Handler) pipeline.Handler {
			return pipeline.HandlerFunc(func(ctx context.Context, t *pipeline.Turn) error {
				defer tm.record(fmt.Sprintf("turn %d", t.Number), time.Now())
				return next.ServeTurn(ctx, t)
			})
		},
		Model: func(next pipeline.Model) pipeline.Model {
			return pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
				defer tm.record(fmt.Sprintf("  model call (turn %d)", c.Turn.Number), time.Now())
				return next.Respond(ctx, c)
			})
		},
		Tool: func(next pipeline.ToolHandler) pipeline.ToolHandler {
			return pipeline.ToolHandlerFunc(func(ctx context.Context, c *pipeline.ToolCall) (*pipeline.ToolResult, error) {
				defer tm.record("  tool "+c.Name, time.Now())
				return next.CallTool(ctx, c)
			})
		},
	}
}

func run(ctx context.Context, w io.Writer, dbPath string) error {
	store, err := sqlite.Open(dbPath) // sessions and checkpoints in one file
	if err != nil {
		return err
	}
	defer store.Close()
	agent := &pipeline.Agent{
		Name:         "weather",
		Instructions: "You answer questions about the weather.",
		Model:        newModel(),
		Tools:        tools(),
	}
	tm := &timing{}
	cp := checkpoint.New(store, checkpoint.WithSession(store)) // tool side effects at once, answers after the verdict
	stack := pipeline.Stack{
		Checkpoint: cp.Middleware(), // a crash at any point resumes from here
		Extra:      []pipeline.Middleware{tm.middleware()},
	}
	runner := pipeline.NewRunner(pipeline.WithMiddleware(stack.Middleware()...))

	res, err := runner.Run(ctx, agent, pipeline.UserInput("What's the weather in Oslo, in Fahrenheit?"),
		pipeline.WithSessionID("quickstart"))
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "items:")
	for _, it := range res.NewItems() {
		text := it.Text()
		if it.Name() != "" {
			text = it.Name() + " " + text
		}
		fmt.Fprintf(w, "  %2d %-17s %s\n", it.Seq(), it.Kind(), strings.ReplaceAll(text, "\n", " "))
	}
	fmt.Fprintln(w, "timing:")
	for _, l := range tm.lines {
		fmt.Fprintln(w, "  "+l)
	}
	u := res.Usage()
	fmt.Fprintf(w, "usage: %d requests, %d input and %d output tokens\n", u.Requests, u.InputTokens, u.OutputTokens)
	stored, err := store.List(ctx, "quickstart", 0)
	if err != nil {
		return err
	}
	saved, err := store.Load(ctx, res.RunID())
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "stored in %s: the session holds %d items; the run's checkpoint is at version %d\n",
		filepath.Base(dbPath), len(stored), saved.Version())
	fmt.Fprintln(w, "final output:", res.FinalOutput())
	fmt.Fprintln(w, "see what it stored:")
	fmt.Fprintf(w, "  go run github.com/turnkit/turnkit/cmd/turnkit -db %s show quickstart\n", dbPath)
	fmt.Fprintf(w, "  go run github.com/turnkit/turnkit/cmd/turnkit -db %s runs\n", dbPath)
	fmt.Fprintf(w, "  go run github.com/turnkit/turnkit/cmd/turnkit -db %s serve   # the web inspector on http://127.0.0.1:8080/\n", dbPath)
	return nil
}
