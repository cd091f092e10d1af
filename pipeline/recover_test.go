package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
)

func TestRecover(t *testing.T) {
	panicky := func(name string) pipeline.Tool {
		return pipeline.NewTool(pipeline.ToolSpec{Name: name}, func(context.Context, json.RawMessage) (string, error) {
			panic(name + " exploded")
		})
	}
	errValue := errors.New("an error value")
	tests := []struct {
		name  string
		agent *pipeline.Agent
		stage string
		value any
	}{
		{
			name:  "turn",
			stage: "turn",
			value: "instructions exploded",
			agent: &pipeline.Agent{Name: "a", Model: scripted.New(scripted.Reply("x")),
				InstructionsFunc: func(context.Context, *pipeline.Turn) (string, error) { panic("instructions exploded") }},
		},
		{
			name:  "model",
			stage: "model",
			value: errValue,
			agent: &pipeline.Agent{Name: "a", Model: pipeline.ModelFunc(func(context.Context, *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
				panic(errValue)
			})},
		},
		{
			name:  "one tool",
			stage: "tool",
			value: "t exploded",
			agent: &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{panicky("t")}, Model: scripted.New(scripted.CallTool("t", `{}`))},
		},
		{
			name:  "parallel tools",
			stage: "tool",
			value: "t exploded",
			agent: &pipeline.Agent{Name: "a", Tools: []pipeline.Tool{panicky("t"), echo("ok")}, Model: scripted.New(
				scripted.Respond(scripted.Call("ok", `{}`), scripted.Call("t", `{}`), scripted.Call("ok", `{}`)),
			)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := pipeline.NewRunner(pipeline.WithRecover()).Run(context.Background(), tt.agent, pipeline.UserInput("hi"))
			var pe *pipeline.PanicError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v (%T), want *PanicError", err, err)
			}
			if pe.Stage != tt.stage || pe.Value != tt.value || len(pe.Stack) == 0 {
				t.Errorf("PanicError{Stage: %q, Value: %v, %d bytes of stack}, want stage %q, value %v and a stack", pe.Stage, pe.Value, len(pe.Stack), tt.stage, tt.value)
			}
			if verr, ok := tt.value.(error); ok && !errors.Is(err, verr) {
				t.Errorf("errors.Is(err, panic value) = false")
			}
			if res == nil {
				t.Fatal("nil result after a recovered panic")
			}
		})
	}
}

// TestRecoverSeesInnerMiddlewarePanics checks that a panic in one
// middleware is recovered and the middleware outside it sees an ordinary
// error.
func TestRecoverSeesInnerMiddlewarePanics(t *testing.T) {
	var outerErr error
	outer := pipeline.Middleware{Turn: func(next pipeline.Handler) pipeline.Handler {
		return pipeline.HandlerFunc(func(ctx context.Context, t *pipeline.Turn) error {
			outerErr = next.ServeTurn(ctx, t)
			return outerErr
		})
	}}
	inner := pipeline.Middleware{Model: func(next pipeline.Model) pipeline.Model {
		return pipeline.ModelFunc(func(context.Context, *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
			panic("inner middleware")
		})
	}}
	a := &pipeline.Agent{Name: "a", Model: scripted.New(scripted.Reply("x"))}
	_, err := pipeline.NewRunner(pipeline.WithMiddleware(outer, inner), pipeline.WithRecover()).Run(context.Background(), a, pipeline.UserInput("hi"))
	var pe *pipeline.PanicError
	if !errors.As(err, &pe) || pe.Stage != "model" || !errors.As(outerErr, &pe) {
		t.Errorf("err = %v, outer saw %v; want a model-stage *PanicError in both", err, outerErr)
	}
}

// TestRecoverCoversOutermostMiddleware checks that a panic in the
// outermost middleware's run and turn stages ends the run with a
// *PanicError rather than crashing the program.
func TestRecoverCoversOutermostMiddleware(t *testing.T) {
	for _, stage := range []string{"run", "turn"} {
		t.Run(stage, func(t *testing.T) {
			mw := pipeline.Middleware{}
			switch stage {
			case "run":
				mw.Run = func(pipeline.RunHandler) pipeline.RunHandler {
					return pipeline.RunHandlerFunc(func(context.Context, *pipeline.RunCall) (*pipeline.Result, error) { panic("outer run") })
				}
			case "turn":
				mw.Turn = func(pipeline.Handler) pipeline.Handler {
					return pipeline.HandlerFunc(func(context.Context, *pipeline.Turn) error { panic("outer turn") })
				}
			}
			a := &pipeline.Agent{Name: "a", Model: scripted.New(scripted.Reply("x"))}
			res, err := pipeline.NewRunner(pipeline.WithMiddleware(mw), pipeline.WithRecover()).Run(context.Background(), a, pipeline.UserInput("hi"))
			var pe *pipeline.PanicError
			if !errors.As(err, &pe) || pe.Stage != stage || pe.Value != "outer "+stage {
				t.Fatalf("err = %v, want a %s-stage *PanicError", err, stage)
			}
			if res == nil {
				t.Fatal("nil result after a recovered panic")
			}
		})
	}
}
