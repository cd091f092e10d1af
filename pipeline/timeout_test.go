package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool"
)

// waitTool waits until its context is done and returns its error, after
// noting whether the context had a deadline.
func waitTool(name string, opts ...tool.Option) (pipeline.Tool, func() []bool) {
	var (
		mu        sync.Mutex
		deadlines []bool
	)
	t := tool.Func(name, "Waits.", func(ctx context.Context, _ struct{}) (string, error) {
		_, ok := ctx.Deadline()
		mu.Lock()
		deadlines = append(deadlines, ok)
		mu.Unlock()
		<-ctx.Done()
		return "", ctx.Err()
	}, opts...)
	return t, func() []bool {
		mu.Lock()
		defer mu.Unlock()
		return append([]bool(nil), deadlines...)
	}
}

// resultErrs is a tool middleware that keeps the Err of each result.
type resultErrs struct {
	mu   sync.Mutex
	errs []error
}

func (r *resultErrs) middleware() pipeline.Middleware {
	return pipeline.Middleware{Name: "results", Tool: func(next pipeline.ToolHandler) pipeline.ToolHandler {
		return pipeline.ToolHandlerFunc(func(ctx context.Context, c *pipeline.ToolCall) (*pipeline.ToolResult, error) {
			res, err := next.CallTool(ctx, c)
			if err == nil {
				r.mu.Lock()
				r.errs = append(r.errs, res.Err)
				r.mu.Unlock()
			}
			return res, err
		})
	}}
}

func TestToolTimeout(t *testing.T) {
	t.Parallel()
	failing := pipeline.NewTool(pipeline.ToolSpec{Name: "failing"}, func(context.Context, json.RawMessage) (string, error) {
		return "", errors.New("no luck")
	})
	tests := []struct {
		name      string
		toolOpts  []tool.Option
		opts      []pipeline.Option
		calls     []scripted.Part
		wantAbort bool
		// what the output the model sees contains
		wantOutputs []string
		deadline    bool
	}{
		{
			name: "own limit, output to the model", toolOpts: []tool.Option{tool.WithTimeout(time.Millisecond)},
			calls: []scripted.Part{scripted.Call("wait", `{}`)}, deadline: true,
			wantOutputs: []string{`tool "wait" call call_`, "timed out after 1ms"},
		},
		{
			name: "runner default", opts: []pipeline.Option{pipeline.WithToolTimeout(time.Millisecond)},
			calls: []scripted.Part{scripted.Call("wait", `{}`)}, deadline: true,
			wantOutputs: []string{"timed out after 1ms"},
		},
		{
			name: "own limit wins", toolOpts: []tool.Option{tool.WithTimeout(2 * time.Millisecond)}, opts: []pipeline.Option{pipeline.WithToolTimeout(time.Hour)},
			calls: []scripted.Part{scripted.Call("wait", `{}`)}, deadline: true,
			wantOutputs: []string{"timed out after 2ms"},
		},
		{
			name: "aborts with the tool errors", toolOpts: []tool.Option{tool.WithTimeout(time.Millisecond)},
			opts:  []pipeline.Option{pipeline.WithToolErrorsAbort()},
			calls: []scripted.Part{scripted.Call("wait", `{}`)}, deadline: true, wantAbort: true,
		},
		{
			name: "timeouts abort, other errors are outputs", toolOpts: []tool.Option{tool.WithTimeout(time.Millisecond)},
			opts:  []pipeline.Option{pipeline.WithToolTimeoutsAbort(), pipeline.WithToolConcurrency(1)},
			calls: []scripted.Part{scripted.Call("failing", `{}`), scripted.Call("wait", `{}`)}, deadline: true, wantAbort: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			wait, deadlines := waitTool("wait", tt.toolOpts...)
			rec := &resultErrs{}
			runner := pipeline.NewRunner(append(tt.opts, pipeline.WithMiddleware(rec.middleware()))...)
			agent := &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{wait, failing},
				Model: scripted.New(scripted.Respond(tt.calls...), scripted.Reply("done"))}
			res, err := runner.Run(context.Background(), agent, pipeline.UserInput("go"))
			if got := deadlines(); len(got) != 1 || got[0] != tt.deadline {
				t.Errorf("the tool's context had a deadline: %v, want [%v]", got, tt.deadline)
			}
			if tt.wantAbort {
				te, ok := errors.AsType[*pipeline.ToolError](err)
				if !ok || !errors.Is(err, pipeline.ErrToolTimeout) || !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("err = %v, want a *ToolError wrapping a timeout", err)
				}
				if tt, ok := errors.AsType[*pipeline.ToolTimeoutError](te); !ok || tt.Tool != "wait" || tt.CallID == "" {
					t.Errorf("timeout error = %+v", tt)
				}
				if _, ok := pipeline.StateOf(err); !ok {
					t.Error("the error carries no state")
				}
				return
			}
			if err != nil || res.FinalOutput() != "done" {
				t.Fatalf("run = %q, %v", res.FinalOutput(), err)
			}
			var outs []string
			for _, it := range res.NewItems() {
				if it.Kind() == state.KindToolOutput {
					outs = append(outs, it.Text())
				}
			}
			if len(outs) != 1 {
				t.Fatalf("outputs %q, want 1", outs)
			}
			for _, want := range tt.wantOutputs {
				if !strings.Contains(outs[0], want) {
					t.Errorf("output = %q, want it to contain %q", outs[0], want)
				}
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.errs) != 1 {
				t.Fatalf("results %v", rec.errs)
			}
			te, ok := errors.AsType[*pipeline.ToolTimeoutError](rec.errs[0])
			if !ok || te.Tool != "wait" || !errors.Is(te, pipeline.ErrToolTimeout) {
				t.Errorf("result Err = %v, want a *ToolTimeoutError of wait", rec.errs[0])
			}
		})
	}
}

// A tool without a limit gets no deadline; a negative limit of its own
// exempts it from the runner's default; a call that returns in time keeps
// its output.
func TestToolTimeoutNotApplied(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		seen = map[string]bool{}
	)
	fast := func(name string, opts ...tool.Option) pipeline.Tool {
		return tool.Func(name, "Answers at once.", func(ctx context.Context, _ struct{}) (string, error) {
			_, ok := ctx.Deadline()
			mu.Lock()
			seen[name] = ok
			mu.Unlock()
			return "ok " + name, nil
		}, opts...)
	}
	for _, tc := range []struct {
		name string
		opts []pipeline.Option
		tool pipeline.Tool
		want bool
	}{
		{name: "none", tool: fast("none")},
		{name: "exempt", opts: []pipeline.Option{pipeline.WithToolTimeout(time.Hour)}, tool: fast("exempt", tool.WithTimeout(-1))},
		{name: "in_time", opts: []pipeline.Option{pipeline.WithToolTimeout(time.Hour)}, tool: fast("in_time"), want: true},
	} {
		runner := pipeline.NewRunner(tc.opts...)
		agent := &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{tc.tool},
			Model: scripted.New(scripted.CallTool(tc.name, `{}`), scripted.Reply("done"))}
		res, err := runner.Run(context.Background(), agent, pipeline.UserInput("go"))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if out := res.NewItems()[2].Text(); out != "ok "+tc.name {
			t.Errorf("%s: output %q", tc.name, out)
		}
		mu.Lock()
		if seen[tc.name] != tc.want {
			t.Errorf("%s: deadline %v, want %v", tc.name, seen[tc.name], tc.want)
		}
		mu.Unlock()
	}
}

// A run cancelled while a limited tool waits ends with the context's
// error: the cancellation is not the tool's timeout.
func TestToolTimeoutIsNotCancellation(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	wait := tool.Func("wait", "Waits.", func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	}, tool.WithTimeout(time.Hour))
	go func() {
		<-started
		cancel()
	}()
	runner := pipeline.NewRunner()
	agent := &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{wait}, Model: scripted.New(scripted.CallTool("wait", `{}`), scripted.Reply("done"))}
	_, err := runner.Run(ctx, agent, pipeline.UserInput("go"))
	if !errors.Is(err, context.Canceled) || errors.Is(err, pipeline.ErrToolTimeout) {
		t.Fatalf("err = %v, want context.Canceled and no timeout", err)
	}
}
