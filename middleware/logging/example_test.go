package logging_test

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/turnkit/turnkit/middleware/logging"
	"github.com/turnkit/turnkit/model/scripted"
	"github.com/turnkit/turnkit/pipeline"
)

func ExampleMiddleware() {
	logger := zap.NewExample() // JSON to stdout, debug level, no timestamps
	defer logger.Sync()

	stopped := time.Unix(0, 0) // a stopped clock keeps the durations stable
	runner := pipeline.NewRunner(pipeline.WithMiddleware(
		logging.Middleware(logger.WithOptions(zap.IncreaseLevel(zap.InfoLevel)),
			logging.WithClock(func() time.Time { return stopped })),
	))
	agent := &pipeline.Agent{Name: "assistant", Model: scripted.New(scripted.Reply("hello"))}
	res, err := runner.Run(context.Background(), agent, pipeline.UserInput("hi"), pipeline.WithRunID("run_1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.FinalOutput())
	// Output:
	// {"level":"info","msg":"run finished","run_id":"run_1","agent":"assistant","outcome":"final_output","turns":1,"duration":"0s","input_tokens":1,"output_tokens":1}
	// hello
}

func ExampleWithPayloads() {
	logger := zap.NewExample()
	defer logger.Sync()

	stopped := time.Unix(0, 0)
	runner := pipeline.NewRunner(pipeline.WithMiddleware(
		logging.Middleware(logger, logging.WithPayloads(), logging.WithClock(func() time.Time { return stopped })),
	))
	agent := &pipeline.Agent{
		Name:    "assistant",
		Model:   scripted.New(scripted.CallTool("echo", `{"text":"hi"}`)),
		Tools:   []pipeline.Tool{echo("echo")},
		ToolUse: pipeline.StopOnFirstTool(),
	}
	if _, err := runner.Run(context.Background(), agent, pipeline.UserInput("hi"), pipeline.WithRunID("run_1")); err != nil {
		fmt.Println(err)
	}
	// Output:
	// {"level":"debug","msg":"run started","run_id":"run_1","agent":"assistant","resumed":false,"streaming":false}
	// {"level":"debug","msg":"model call","run_id":"run_1","turn":1,"agent":"assistant","model":"","input_items":1,"duration":"0s","response_id":"resp_run_1_1","response_model":"scripted","input_tokens":1,"output_tokens":1,"output":[{"kind":"tool_call","name":"echo","text":"{\"text\":\"hi\"}"}]}
	// {"level":"debug","msg":"tool call","run_id":"run_1","turn":1,"tool":"echo","call_id":"call_run_1_1_1","duration":"0s","status":"completed","arguments":"{\"text\":\"hi\"}","output":"echo:{\"text\":\"hi\"}"}
	// {"level":"debug","msg":"turn finished","run_id":"run_1","turn":1,"agent":"assistant","resumed":false,"next":"final_output","calls":1,"duration":"0s"}
	// {"level":"info","msg":"run finished","run_id":"run_1","agent":"assistant","outcome":"final_output","turns":1,"duration":"0s","input_tokens":1,"output_tokens":1}
}
