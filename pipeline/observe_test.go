package pipeline_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
)

// TestModelObserversSeeOnlyCallsThatHappen: a model call's observers are
// called around the agent's model, in order, and not at all when a stage
// inside the one that observes answers without calling the model.
func TestModelObserversSeeOnlyCallsThatHappen(t *testing.T) {
	t.Parallel()
	errRefused := errors.New("refused")
	for _, refuse := range []bool{false, true} {
		var log []string
		observe := func(name string) pipeline.Middleware {
			return pipeline.Middleware{Model: func(next pipeline.Model) pipeline.Model {
				return pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
					c.Observe(func(ctx context.Context) (context.Context, func(*pipeline.ModelResponse, error)) {
						log = append(log, "start "+name)
						return ctx, func(_ *pipeline.ModelResponse, err error) { log = append(log, "end "+name) }
					})
					return next.Respond(ctx, c)
				})
			}}
		}
		gate := pipeline.Middleware{Model: func(next pipeline.Model) pipeline.Model {
			return pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
				if refuse {
					return nil, errRefused
				}
				return next.Respond(ctx, c)
			})
		}}
		r := pipeline.NewRunner(pipeline.WithMiddleware(observe("a"), observe("b"), gate))
		_, err := r.Run(context.Background(), &pipeline.Agent{Name: "a", Model: scripted.New(scripted.Reply("hi"))}, pipeline.UserInput("hi"))
		want := "start a,start b,end b,end a"
		if refuse {
			want = ""
			if !errors.Is(err, errRefused) {
				t.Fatalf("error %v, want the refusal", err)
			}
		} else if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(log, ","); got != want {
			t.Errorf("refuse=%v: observers %q, want %q", refuse, got, want)
		}
	}
}
