package anthropic_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/turnkit/turnkit/model/anthropic"
	"github.com/turnkit/turnkit/pipeline"
)

// An agent on Claude. The client here talks to a server that replays a
// recorded response; drop the base URL and HTTP client options (the
// client reads ANTHROPIC_API_KEY) to talk to Anthropic.
func ExampleNew() {
	recorded, _ := os.ReadFile("testdata/final.json")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(recorded)
	}))
	defer srv.Close()

	client := sdk.NewClient(option.WithBaseURL(srv.URL), option.WithHTTPClient(srv.Client()), option.WithAPIKey("offline"))
	agent := &pipeline.Agent{
		Name:         "weather",
		Instructions: "Answer weather questions.",
		Model: anthropic.New(client,
			anthropic.WithModel("claude-sonnet-4-5"),
			anthropic.WithMaxTokens(1024),
			anthropic.WithCacheControl(anthropic.CacheSystem, anthropic.CacheHistory)),
	}
	res, err := pipeline.NewRunner().Run(context.Background(), agent, pipeline.UserInput("Weather in Paris?"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.FinalOutput())
	fmt.Println(res.Usage().InputTokens, "input tokens,", res.Usage().CachedTokens, "from the cache")
	// Output:
	// It is sunny and 22C in Paris.
	// 3662 input tokens, 3072 from the cache
}
