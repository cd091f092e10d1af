package retry_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/turnkit/turnkit/middleware/retry"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
)

// The agent's model is rate limited twice, then answers: the call is made
// three times, waiting as the server asked. Here the wait only prints.
func ExampleMiddleware() {
	limited := &pipeline.ModelError{Status: 429, Retryable: true, RetryAfter: 2 * time.Second, Err: errors.New("rate limited")}
	agent := &pipeline.Agent{Name: "assistant", Model: scripted.New(
		scripted.Fail(limited), scripted.Fail(limited), scripted.Reply("Hello!"),
	)}
	runner := pipeline.NewRunner(pipeline.WithMiddleware(pipeline.Stack{
		Extra: []pipeline.Middleware{retry.Middleware(
			retry.WithSleep(func(_ context.Context, d time.Duration) error {
				fmt.Println("waiting", d)
				return nil
			}),
		)},
	}.Middleware()...))
	res, err := runner.Run(context.Background(), agent, pipeline.UserInput("Hi"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.FinalOutput())
	// Output:
	// waiting 2s
	// waiting 2s
	// Hello!
}

// When the agent's model stays down, the call falls back to another
// model, which may be another provider's: Name is the model name its
// settings use. When every model fails, the error says how many attempts
// were made.
func ExampleWithFallback() {
	down := &pipeline.ModelError{Status: 503, Retryable: true, Err: errors.New("overloaded")}
	backup := scripted.New(scripted.Reply("Hello from the backup."), scripted.Fail(down), scripted.Fail(down))
	agent := &pipeline.Agent{Name: "assistant", Model: scripted.New(scripted.Fail(down), scripted.Fail(down))}
	runner := pipeline.NewRunner(pipeline.WithMiddleware(retry.Middleware(
		retry.WithAttempts(2),
		retry.WithFallback(retry.Fallback{Model: backup, Name: "backup-model"}),
		retry.WithSleep(func(context.Context, time.Duration) error { return nil }),
	)))
	res, err := runner.Run(context.Background(), agent, pipeline.UserInput("Hi"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.FinalOutput())

	never := scripted.New(scripted.Fail(down), scripted.Fail(down))
	_, err = runner.Run(context.Background(), &pipeline.Agent{Name: "assistant", Model: never}, pipeline.UserInput("Hi"))
	fmt.Println(err)
	// Output:
	// Hello from the backup.
	// retry: model call failed after 4 attempts on 2 models: pipeline: model status 503: overloaded
}
