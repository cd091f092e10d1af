package compaction_test

import (
	"context"
	"fmt"

	"github.com/turnkit/turnkit/middleware/compaction"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/memory"
)

// A conversation whose model never sees more than four items: older
// messages give way to a summary, written here by a scripted model, while
// the session keeps them all.
func ExampleMiddleware() {
	store := memory.New()
	summarizer := scripted.Generate(func(n int) scripted.Step { return scripted.Reply(fmt.Sprintf("summary %d", n)) })
	show := pipeline.Middleware{Name: "show", Model: func(next pipeline.Model) pipeline.Model {
		return pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
			fmt.Print("the model sees:")
			for _, it := range c.Input.All() {
				fmt.Printf(" %q", it.Text())
			}
			fmt.Println()
			return next.Respond(ctx, c)
		})
	}}
	runner := pipeline.NewRunner(pipeline.WithMiddleware(
		persistence.Middleware(store, persistence.WithContinuation()),
		compaction.Middleware(compaction.Summarize(summarizer), compaction.WithMaxItems(4), compaction.WithKeep(1)),
		show,
	))
	for i := range 4 {
		agent := &pipeline.Agent{Name: "assistant", Model: scripted.New(scripted.Reply(fmt.Sprintf("answer %d", i)))}
		if _, err := runner.Run(context.Background(), agent, pipeline.UserInput(fmt.Sprintf("question %d", i)), pipeline.WithSessionID("chat")); err != nil {
			fmt.Println(err)
			return
		}
	}
	items, _ := store.List(context.Background(), "chat", 0)
	fmt.Println("the session holds", len(items), "items")
	// Output:
	// the model sees: "question 0"
	// the model sees: "question 0" "answer 0" "question 1"
	// the model sees: "Summary of the conversation so far:\nsummary 1" "question 2"
	// the model sees: "Summary of the conversation so far:\nsummary 1" "question 2" "answer 2" "question 3"
	// the session holds 8 items
}
