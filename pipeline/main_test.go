package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echo returns a tool that answers "<name>(<arguments>)".
func echo(name string) pipeline.Tool {
	return pipeline.NewTool(pipeline.ToolSpec{Name: name}, func(_ context.Context, args json.RawMessage) (string, error) {
		return name + "(" + string(args) + ")", nil
	})
}

// failing returns a tool that fails with err.
func failing(name string, err error) pipeline.Tool {
	return pipeline.NewTool(pipeline.ToolSpec{Name: name}, func(context.Context, json.RawMessage) (string, error) {
		return "", err
	})
}

// blocking returns a tool that signals started and waits for its context.
func blocking(name string, started chan<- string) pipeline.Tool {
	return pipeline.NewTool(pipeline.ToolSpec{Name: name}, func(ctx context.Context, args json.RawMessage) (string, error) {
		started <- string(args)
		<-ctx.Done()
		return "", ctx.Err()
	})
}

// logbook is a concurrency-safe list of lines.
type logbook struct {
	mu    sync.Mutex
	lines []string
}

func (l *logbook) add(format string, args ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *logbook) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

// trace returns a middleware that logs before and after each stage.
func trace(name string, log *logbook) pipeline.Middleware {
	return pipeline.Middleware{
		Name: name,
		Run: func(next pipeline.RunHandler) pipeline.RunHandler {
			return pipeline.RunHandlerFunc(func(ctx context.Context, c *pipeline.RunCall) (*pipeline.Result, error) {
				log.add("%s run >", name)
				defer log.add("%s run <", name)
				return next.ServeRun(ctx, c)
			})
		},
		Turn: func(next pipeline.Handler) pipeline.Handler {
			return pipeline.HandlerFunc(func(ctx context.Context, t *pipeline.Turn) error {
				log.add("%s turn %d >", name, t.Number)
				defer log.add("%s turn %d <", name, t.Number)
				return next.ServeTurn(ctx, t)
			})
		},
		Model: func(next pipeline.Model) pipeline.Model {
			return pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
				log.add("%s model %d >", name, c.Turn.Number)
				defer log.add("%s model %d <", name, c.Turn.Number)
				return next.Respond(ctx, c)
			})
		},
		Tool: func(next pipeline.ToolHandler) pipeline.ToolHandler {
			return pipeline.ToolHandlerFunc(func(ctx context.Context, c *pipeline.ToolCall) (*pipeline.ToolResult, error) {
				log.add("%s tool %s >", name, c.Name)
				defer log.add("%s tool %s <", name, c.Name)
				return next.CallTool(ctx, c)
			})
		},
	}
}

// itemView is what two runs must agree on for an item.
type itemView struct {
	Seq    int64
	Kind   string
	CallID string
	Name   string
	Raw    string
}

func views(items []state.Item) []itemView {
	out := make([]itemView, len(items))
	for i, it := range items {
		out[i] = itemView{Seq: it.Seq(), Kind: it.Kind().String(), CallID: it.CallID(), Name: it.Name(), Raw: string(it.Raw())}
	}
	return out
}

// texts returns "kind:text" for each item.
func texts(items []state.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Kind().String() + ":" + it.Text()
	}
	return out
}

func outputs(items []state.Item) []string {
	var out []string
	for _, it := range items {
		if it.Kind() == state.KindToolOutput {
			out = append(out, it.Text())
		}
	}
	return out
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
