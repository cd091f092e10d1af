package openai_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/tool"
)

// recorded serves recorded API responses (files of testdata/), one per
// request, in order, so the examples run offline against the real client.
// It stands in for api.openai.com; a program passes no base URL.
func recorded(files ...string) *httptest.Server {
	var mu sync.Mutex
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if len(files) == 0 {
			http.Error(w, `{"error":{"message":"no recorded response left"}}`, http.StatusTeapot)
			return
		}
		body, err := os.ReadFile(filepath.Join("testdata", files[0]))
		files = files[1:]
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
}

// getWeather is the tool the recorded responses call.
func getWeather() pipeline.Tool {
	type args struct {
		Location string `json:"location"`
	}
	return tool.Func("get_weather", "Current weather at a location.",
		func(ctx context.Context, in args) (string, error) {
			return "sunny, 22 °C in " + in.Location, nil
		})
}

// The Responses API model in a run: the model calls a tool, the runner
// runs it, and the model answers. The responses are recorded ones, served
// locally; against the API, drop the base URL and set OPENAI_API_KEY.
func ExampleNew() {
	srv := recorded("responses_tool_call.json", "responses_final.json")
	defer srv.Close()
	client := sdk.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("sk-example"))

	agent := &pipeline.Agent{
		Name:         "assistant",
		Instructions: "Answer in one sentence.",
		Tools:        []pipeline.Tool{getWeather()},
		Model:        openai.New(client, openai.WithInclude("reasoning.encrypted_content")),
		Settings:     pipeline.ModelSettings{Model: "gpt-5-mini", ReasoningEffort: "low"},
	}
	res, err := pipeline.NewRunner().Run(context.Background(), agent, pipeline.UserInput("Weather in Paris?"))
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	for _, it := range res.NewItems() {
		fmt.Printf("%d %s %s\n", it.Seq(), it.Kind(), it.Text())
	}
	fmt.Println("final:", res.FinalOutput())
	u := res.State().Usage()
	fmt.Println("tokens in, out:", u.InputTokens, u.OutputTokens)
	// Output:
	// 1 user_message Weather in Paris?
	// 2 reasoning The user wants the weather; call get_weather.
	// 3 tool_call {"location":"Paris, France"}
	// 4 tool_output sunny, 22 °C in Paris, France
	// 5 assistant_message It is sunny in Paris, 22 °C.
	// final: It is sunny in Paris, 22 °C.
	// tokens in, out: 621 35
}

// A Chat Completions model, for the OpenAI API or a server compatible with
// it (set its base URL). Here the server plays recorded completions: a tool
// call, then the answer.
func ExampleNewChat() {
	srv := recorded("chat_tool_call.json", "chat_final.json")
	defer srv.Close()
	client := sdk.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("sk-example"))

	agent := &pipeline.Agent{
		Name:  "assistant",
		Tools: []pipeline.Tool{getWeather()},
		Model: openai.NewChat(client, openai.WithModel("gpt-4o-mini")),
	}
	res, err := pipeline.NewRunner().Run(context.Background(), agent, pipeline.UserInput("Weather in Paris?"))
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	for _, it := range res.NewItems() {
		fmt.Printf("%d %s %s %s\n", it.Seq(), it.Kind(), it.CallID(), it.Text())
	}
	fmt.Println("final:", res.FinalOutput())
	// Output:
	// 1 user_message  Weather in Paris?
	// 2 tool_call call_abc123 {"location":"Paris, France"}
	// 3 tool_output call_abc123 sunny, 22 °C in Paris, France
	// 4 assistant_message  It is sunny in Paris, 22 °C.
	// final: It is sunny in Paris, 22 °C.
}

// A conversation chained on the server across its runs: ChainResponses on
// every run, and persistence with WithContinuation, which remembers the
// last response of each message in the session. The second message sends
// previous_response_id and only itself. The responses are recorded ones,
// served locally.
func ExampleChainResponses() {
	srv := recorded("responses_text.json", "responses_text.json")
	defer srv.Close()
	client := sdk.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("sk-example"))

	runner := pipeline.NewRunner(pipeline.WithMiddleware(
		persistence.Middleware(memory.New(), persistence.WithContinuation()),
	))
	agent := &pipeline.Agent{Name: "assistant", Model: openai.New(client), Settings: pipeline.ModelSettings{Model: "gpt-5-mini"}}
	for _, text := range []string{"Hello!", "And again."} {
		res, err := runner.Run(context.Background(), agent, pipeline.UserInput(text),
			pipeline.WithSessionID("chat"), openai.ChainResponses())
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Println("last response:", res.LastResponseID())
	}
	// Output:
	// last response: resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b
	// last response: resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b
}

// A conversation whose earlier part another program stored on the server
// (response "resp_earlier"): ChainFrom names that response, so the first
// call sends previous_response_id and only this run's input, and later
// calls chain on their own responses. The Responses API's own settings
// (store, truncation) are the model's options: an agent that needs others
// gets a model of its own. The response is a recorded one, served
// locally.
func ExampleChainFrom() {
	srv := recorded("responses_text.json")
	defer srv.Close()
	client := sdk.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("sk-example"))

	agent := &pipeline.Agent{
		Name:     "assistant",
		Model:    openai.New(client, openai.WithStore(true), openai.WithTruncation("auto")),
		Settings: pipeline.ModelSettings{Model: "gpt-5-mini"},
	}
	res, err := pipeline.NewRunner().Run(context.Background(), agent, pipeline.UserInput("And again."),
		openai.ChainFrom("resp_earlier"))
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println("final:", res.FinalOutput())
	fmt.Println("last response:", res.LastResponseID())
	// Output:
	// final: The weather in Paris is sunny, 22 degrees.
	// last response: resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b
}
