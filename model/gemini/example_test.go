package gemini_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"google.golang.org/genai"

	"github.com/turnkit/turnkit/model/gemini"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/tool"
)

// recordedAPI serves recorded responses (files of testdata/), one per
// request, so the example runs offline against the real client. A
// program leaves the base URL out and sets GEMINI_API_KEY.
func recordedAPI(files ...string) *httptest.Server {
	var mu sync.Mutex
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if len(files) == 0 {
			http.Error(w, `{"error":{"code":418,"message":"no recorded response left"}}`, http.StatusTeapot)
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

func Example() {
	api := recordedAPI("call.json", "text.json")
	defer api.Close()
	ctx := context.Background()
	client, err := genai.NewClient(ctx, &genai.ClientConfig{
		APIKey:      "recorded", // a program reads GEMINI_API_KEY instead
		Backend:     genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: api.URL},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	type place struct {
		Location string `json:"location"`
	}
	agent := &pipeline.Agent{
		Name:         "forecaster",
		Instructions: "Answer weather questions.",
		Model:        gemini.New(client, gemini.WithModel("gemini-2.5-flash")),
		Tools: []pipeline.Tool{tool.Func("get_weather", "Get the weather for a location.",
			func(ctx context.Context, p place) (string, error) { return "sunny in " + p.Location, nil })},
	}
	res, err := pipeline.NewRunner().Run(ctx, agent, pipeline.UserInput("What is the weather in Paris and Tokyo?"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.FinalOutput())
	for _, it := range res.NewItems() {
		fmt.Println(strings.TrimSpace(it.Kind().String() + " " + it.Name()))
	}
	// Output:
	// It is sunny in Paris and in Tokyo.
	// user_message
	// reasoning
	// reasoning
	// tool_call get_weather
	// tool_call get_weather
	// tool_output get_weather
	// tool_output get_weather
	// reasoning
	// assistant_message
}
