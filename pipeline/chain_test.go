package pipeline_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
)

// TestOnionOrdering runs a real run through two middleware and checks that
// the first is the outermost on every stage, end to end.
func TestOnionOrdering(t *testing.T) {
	var log logbook
	r := pipeline.NewRunner(pipeline.WithMiddleware(trace("outer", &log), trace("inner", &log)))
	a := &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{echo("t")}, Model: scripted.New(
		scripted.CallTool("t", `{}`),
		scripted.Reply("done"),
	)}
	if _, err := r.Run(context.Background(), a, pipeline.UserInput("hi")); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"outer run >", "inner run >",
		"outer turn 1 >", "inner turn 1 >",
		"outer model 1 >", "inner model 1 >", "inner model 1 <", "outer model 1 <",
		"outer tool t >", "inner tool t >", "inner tool t <", "outer tool t <",
		"inner turn 1 <", "outer turn 1 <",
		"outer turn 2 >", "inner turn 2 >",
		"outer model 2 >", "inner model 2 >", "inner model 2 <", "outer model 2 <",
		"inner turn 2 <", "outer turn 2 <",
		"inner run <", "outer run <",
	}
	if diff := cmp.Diff(want, log.get()); diff != "" {
		t.Errorf("stage order (-want +got):\n%s", diff)
	}
}

// TestChainOrderEachStage checks Chain on each stage alone, with the
// handlers called directly.
func TestChainOrderEachStage(t *testing.T) {
	var log logbook
	chain := pipeline.Chain(trace("a", &log), pipeline.Middleware{}, trace("b", &log), trace("c", &log))
	turn := &pipeline.Turn{Number: 1}
	tests := []struct {
		stage string
		call  func()
		want  []string
	}{
		{"turn", func() {
			_ = chain.Turn(pipeline.HandlerFunc(func(context.Context, *pipeline.Turn) error { log.add("core"); return nil })).ServeTurn(context.Background(), turn)
		}, []string{"a turn 1 >", "b turn 1 >", "c turn 1 >", "core", "c turn 1 <", "b turn 1 <", "a turn 1 <"}},
		{"model", func() {
			_, _ = chain.Model(pipeline.ModelFunc(func(context.Context, *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
				log.add("core")
				return &pipeline.ModelResponse{}, nil
			})).Respond(context.Background(), &pipeline.ModelCall{Turn: turn})
		}, []string{"a model 1 >", "b model 1 >", "c model 1 >", "core", "c model 1 <", "b model 1 <", "a model 1 <"}},
		{"tool", func() {
			_, _ = chain.Tool(pipeline.ToolHandlerFunc(func(context.Context, *pipeline.ToolCall) (*pipeline.ToolResult, error) {
				log.add("core")
				return &pipeline.ToolResult{Status: pipeline.ToolCompleted}, nil
			})).CallTool(context.Background(), &pipeline.ToolCall{Turn: turn, Name: "x"})
		}, []string{"a tool x >", "b tool x >", "c tool x >", "core", "c tool x <", "b tool x <", "a tool x <"}},
		{"run", func() {
			_, _ = chain.Run(pipeline.RunHandlerFunc(func(context.Context, *pipeline.RunCall) (*pipeline.Result, error) {
				log.add("core")
				return nil, nil
			})).ServeRun(context.Background(), &pipeline.RunCall{})
		}, []string{"a run >", "b run >", "c run >", "core", "c run <", "b run <", "a run <"}},
	}
	for _, tt := range tests {
		t.Run(tt.stage, func(t *testing.T) {
			log = logbook{}
			tt.call()
			if diff := cmp.Diff(tt.want, log.get()); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNilStagesPassThrough checks that middleware with nil stages, and an
// empty chain, leave the run as it is without them.
func TestNilStagesPassThrough(t *testing.T) {
	var log logbook
	modelOnly := pipeline.Middleware{Name: "model-only", Model: trace("m", &log).Model}
	tests := []struct {
		name string
		mws  []pipeline.Middleware
		want []string
	}{
		{"none", nil, nil},
		{"empty middleware", []pipeline.Middleware{{}}, nil},
		{"empty chain", []pipeline.Middleware{pipeline.Chain()}, nil},
		{"model stage only", []pipeline.Middleware{{}, modelOnly, pipeline.Chain()}, []string{"m model 1 >", "m model 1 <", "m model 2 >", "m model 2 <"}},
	}
	var baseline []itemView
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log = logbook{}
			a := &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{echo("t")}, Model: scripted.New(scripted.CallTool("t", `{"x":1}`), scripted.Reply("done"))}
			res, err := pipeline.NewRunner(pipeline.WithMiddleware(tt.mws...), pipeline.WithIDGenerator(func() string { return "run" })).Run(context.Background(), a, pipeline.UserInput("hi"))
			if err != nil {
				t.Fatal(err)
			}
			got := views(res.NewItems())
			if baseline == nil {
				baseline = got
			}
			if diff := cmp.Diff(baseline, got); diff != "" {
				t.Errorf("items differ from a run without middleware (-want +got):\n%s", diff)
			}
			if res.FinalOutput() != "done" {
				t.Errorf("FinalOutput = %q, want done", res.FinalOutput())
			}
			if diff := cmp.Diff(tt.want, log.get()); diff != "" {
				t.Errorf("log (-want +got):\n%s", diff)
			}
		})
	}
}

// wrapCounter counts how often each stage of a middleware is wrapped.
type wrapCounter struct{ run, turn, model, tool int }

func (w *wrapCounter) middleware() pipeline.Middleware {
	return pipeline.Middleware{
		Run:   func(next pipeline.RunHandler) pipeline.RunHandler { w.run++; return next },
		Turn:  func(next pipeline.Handler) pipeline.Handler { w.turn++; return next },
		Model: func(next pipeline.Model) pipeline.Model { w.model++; return next },
		Tool:  func(next pipeline.ToolHandler) pipeline.ToolHandler { w.tool++; return next },
	}
}

// TestChainBuiltOnce checks that the stages are wrapped when the runner is
// made, and never per run or per turn.
func TestChainBuiltOnce(t *testing.T) {
	var direct, conditional wrapCounter
	r := pipeline.NewRunner(pipeline.WithMiddleware(
		direct.middleware(),
		pipeline.When(func(*pipeline.Turn) bool { return true }, conditional.middleware()),
	))
	want := wrapCounter{1, 1, 1, 1}
	for range 3 {
		a := &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{echo("t")}, Model: scripted.New(
			scripted.Respond(scripted.Call("t", `{}`), scripted.Call("t", `{}`)),
			scripted.Reply("done"),
		)}
		if _, err := r.Run(context.Background(), a, pipeline.UserInput("hi")); err != nil {
			t.Fatal(err)
		}
	}
	if direct != want || conditional != want {
		t.Errorf("wraps = %+v (direct), %+v (When); want %+v each", direct, conditional, want)
	}
}

// TestWhen checks that When applies a middleware's turn, model and tool
// stages to the matching turns only, and its run stage always.
func TestWhen(t *testing.T) {
	var log logbook
	onTurn2 := pipeline.When(func(t *pipeline.Turn) bool { return t.Number == 2 }, trace("w", &log))
	r := pipeline.NewRunner(pipeline.WithMiddleware(onTurn2))
	a := &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{echo("t")}, Model: scripted.New(
		scripted.CallTool("t", `{}`),
		scripted.CallTool("t", `{}`),
		scripted.Reply("done"),
	)}
	if _, err := r.Run(context.Background(), a, pipeline.UserInput("hi")); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"w run >",
		"w turn 2 >", "w model 2 >", "w model 2 <", "w tool t >", "w tool t <", "w turn 2 <",
		"w run <",
	}
	if diff := cmp.Diff(want, log.get()); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}
