package conversation_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// TestContinuationOnEveryBackend checks persistence's marks on every
// session store: the next run of a session continues from the last
// response and reads its history from the compaction boundary, and a pop
// behind the marks' back makes them be ignored.
func TestContinuationOnEveryBackend(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			sid := fmt.Sprintf("%s-%s", t.Name(), randomID(t))
			ss, _ := b.open(t)
			message := func(runID, text string, compactFrom int) (pipeline.Continuation, bool, []string) {
				t.Helper()
				var (
					cont  pipeline.Continuation
					found bool
					input []string
				)
				probe := pipeline.Middleware{Name: "probe",
					Turn: func(next pipeline.Handler) pipeline.Handler {
						return pipeline.HandlerFunc(func(ctx context.Context, tn *pipeline.Turn) error {
							if compactFrom > 0 && tn.Number == 1 {
								v := &pipeline.View{ID: runID, Items: []state.Item{state.SystemMessage("summary")}, From: compactFrom}
								if err := pipeline.SetView(tn.Run, v); err != nil {
									return err
								}
							}
							return next.ServeTurn(ctx, tn)
						})
					},
					Model: func(next pipeline.Model) pipeline.Model {
						return pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
							var err error
							if cont, found, err = pipeline.ContinuationOf(c.Turn.Run); err != nil {
								return nil, err
							}
							for _, it := range c.Input.All() {
								input = append(input, it.Text())
							}
							return next.Respond(ctx, c)
						})
					}}
				r := pipeline.NewRunner(pipeline.WithMiddleware(
					persistence.Middleware(ss, persistence.WithContinuation(), persistence.WithHistoryByReference()), probe))
				agent := &pipeline.Agent{Name: "a", Model: scripted.New(scripted.Reply("re: " + text))}
				if _, err := r.Run(t.Context(), agent, []state.Item{state.UserMessage(text)},
					pipeline.WithSessionID(sid), pipeline.WithRunID(runID)); err != nil {
					t.Fatal(err)
				}
				return cont, found, input
			}
			message(sid+"-r0", "one", 0)
			message(sid+"-r1", "two", 3) // "one", "re: one", "two" become the summary
			cont, ok, input := message(sid+"-r2", "three", 0)
			if want := []string{"summary", "re: two", "three"}; !slices.Equal(input, want) {
				t.Fatalf("after the boundary: model input %q, want %q", input, want)
			}
			if want := (pipeline.Continuation{ResponseID: "resp_" + strings.ReplaceAll(sid, "/", "-") + "-r1_1", Seen: 2}); !ok || cont != want {
				t.Fatalf("after the boundary: continuation %+v (found %v), want %+v", cont, ok, want)
			}
			if _, _, err := ss.Pop(t.Context(), sid); err != nil {
				t.Fatal(err)
			}
			cont, ok, input = message(sid+"-r3", "four", 0)
			if want := []string{"one", "re: one", "two", "re: two", "three", "four"}; ok || !slices.Equal(input, want) {
				t.Fatalf("after a pop: continuation %+v (found %v), model input %q; want none and %q", cont, ok, input, want)
			}
			all, err := ss.List(t.Context(), sid, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != 7 {
				t.Fatalf("the session holds %d items, want all 7", len(all))
			}
		})
	}
}
