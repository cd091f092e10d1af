package persistence_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/pipeline/pipelinetest"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool"
)

// chartParts is what the plot tool of these tests answers: text and an
// image.
var chartParts = tool.Content{state.TextPart("the chart:"), state.ImageURL("data:image/png;base64,iVBORw0KGgo=", "low")}

func plotTool(runs *pipelinetest.Ledger) pipeline.Tool {
	type args struct {
		Series []int `json:"series"`
	}
	return tool.Func("plot", "Plots a series.", func(ctx context.Context, in args) (tool.Content, error) {
		runs.Record("plot", "")
		return chartParts, nil
	})
}

// lastOutput returns the last tool output among items.
func lastOutput(t *testing.T, items state.Items) state.Item {
	t.Helper()
	for i := items.Len() - 1; i >= 0; i-- {
		if it := items.At(i); it.Kind() == state.KindToolOutput {
			return it
		}
	}
	t.Fatal("no tool output in the model's input")
	return state.Item{}
}

// checkChart fails unless it is plot's output with its parts.
func checkChart(t *testing.T, where string, it state.Item) {
	t.Helper()
	want := state.ToolOutputContent(it.CallID(), "plot", chartParts...)
	if string(it.Raw()) != string(want.Raw()) || it.Text() != "the chart:" {
		t.Errorf("%s: output %s %q, want %s", where, it.Raw(), it.Text(), want.Raw())
	}
	if d := cmp.Diff([]state.ContentPart(chartParts), it.Content(), cmp.AllowUnexported(state.ContentPart{})); d != "" {
		t.Errorf("%s: content (-want +got):\n%s", where, d)
	}
}

// TestContentOutput: a tool's image reaches the model's next call, the
// session holds it, and the session's next run replays it, plain and
// streamed.
func TestContentOutput(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "streamed"}[stream], func(t *testing.T) {
			t.Parallel()
			store := memory.New()
			t.Cleanup(func() { _ = store.Close() })
			var runs pipelinetest.Ledger
			model := scripted.New(
				scripted.CallTool("plot", `{"series":[1,2]}`),
				scripted.Reply("a rising line"),
				scripted.Reply("still rising"),
			)
			agent := &pipeline.Agent{Name: "a", Model: model, Tools: []pipeline.Tool{plotTool(&runs)}}
			runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store)))
			ctx := context.Background()
			run := func(input string) {
				t.Helper()
				opts := []pipeline.RunOption{pipeline.WithSessionID(sid)}
				if !stream {
					if _, err := runner.Run(ctx, agent, pipeline.UserInput(input), opts...); err != nil {
						t.Fatal(err)
					}
					return
				}
				if _, _, err := pipelinetest.Drain(runner.Stream(ctx, agent, pipeline.UserInput(input), opts...)); err != nil {
					t.Fatal(err)
				}
			}
			run("plot 1, 2")
			checkChart(t, "second model call", lastOutput(t, model.Calls()[1].Input))
			items := list(t, store)
			checkChart(t, "session", items[2])
			if d := cmp.Diff([]string{"user:plot 1, 2", "call:plot", "out:the chart:", "msg:a rising line"}, show(items)); d != "" {
				t.Errorf("session (-want +got):\n%s", d)
			}
			run("and now?")
			checkChart(t, "next run's history", lastOutput(t, model.Calls()[2].Input))
		})
	}
}

// TestContentOutputResumed: a tool's image survives a pause and a
// checkpoint round trip, and a resume that reuses the committed output
// (the first resume crashed after the tool ran) gives the model the image,
// not its text.
func TestContentOutputResumed(t *testing.T) {
	t.Parallel()
	for _, mode := range resumeModes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			store := memory.New()
			t.Cleanup(func() { _ = store.Close() })
			var runs pipelinetest.Ledger
			model := scripted.New(
				scripted.CallTool("plot", `{"series":[1,2]}`),
				scripted.Fail(errModelDown), // the first resume crashes after the tool ran
				scripted.Reply("a rising line"),
			)
			agent := &pipeline.Agent{Name: "a", Model: model, Tools: []pipeline.Tool{plotTool(&runs)}}
			runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store), requireApproval("plot")))
			ctx := context.Background()
			res, err := runner.Run(ctx, agent, pipeline.UserInput("plot 1, 2"), pipeline.WithSessionID(sid))
			if err != nil || !res.Interrupted() {
				t.Fatalf("Run = %v, interrupted %v; want a pause", err, res.Interrupted())
			}
			checkpoint, err := state.Marshal(res.State())
			if err != nil {
				t.Fatal(err)
			}
			resume := func() error {
				run, err := state.Unmarshal(checkpoint)
				if err != nil {
					t.Fatal(err)
				}
				decideAll(run, state.Approved)
				return mode.resume(ctx, runner, agent, run)
			}
			if err := resume(); !errors.Is(err, errModelDown) {
				t.Fatalf("first resume = %v, want the crash", err)
			}
			checkChart(t, "first resume's model call", lastOutput(t, model.Calls()[1].Input))
			if err := resume(); err != nil {
				t.Fatalf("second resume = %v", err)
			}
			if n := runs.Runs("plot"); n != 1 {
				t.Errorf("plot ran %d times, want 1", n)
			}
			checkChart(t, "second resume's model call", lastOutput(t, model.Calls()[2].Input))
			checkChart(t, "session", list(t, store)[2])
		})
	}
}
