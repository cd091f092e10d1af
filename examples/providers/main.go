// Command providers runs one weather agent per model provider, the same
// agent and tool on each: Anthropic's Messages API with extended thinking,
// whose thinking blocks the run keeps and sends back, and the Gemini API,
// whose thought signatures it keeps and sends back the same way. Each
// provider is one entry of the providers table; another provider's
// adapter joins by adding an entry.
//
//	go run ./examples/providers
//
// Offline it serves each provider's recorded payloads from testdata to the
// provider's real SDK client; with the provider's API key set
// (ANTHROPIC_API_KEY, GEMINI_API_KEY) it talks to the provider.
package main

import (
	"context"
	"embed"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"google.golang.org/genai"

	"github.com/turnkit/turnkit/model/anthropic"
	"github.com/turnkit/turnkit/model/gemini"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/tool"
)

//go:embed testdata/*.json
var recorded embed.FS

// A provider makes the agent's model: live when its API key is set,
// otherwise over its recorded payloads, served from baseURL by hc.
type provider struct {
	name string
	env  string // the API key's environment variable
	// model returns the model; baseURL and hc are "" and nil when live.
	model func(ctx context.Context, baseURL string, hc *http.Client) (pipeline.Model, error)
}

var providers = []provider{
	{
		name: "anthropic",
		env:  "ANTHROPIC_API_KEY",
		model: func(_ context.Context, baseURL string, hc *http.Client) (pipeline.Model, error) {
			var opts []anthropicopt.RequestOption
			if hc != nil {
				opts = append(opts, anthropicopt.WithBaseURL(baseURL), anthropicopt.WithHTTPClient(hc), anthropicopt.WithAPIKey("offline"))
			}
			return anthropic.New(anthropicsdk.NewClient(opts...),
				anthropic.WithModel("claude-sonnet-4-5"), anthropic.WithThinking(2048),
				anthropic.WithCacheControl(anthropic.CacheSystem, anthropic.CacheHistory)), nil
		},
	},
	{
		name: "gemini",
		env:  "GEMINI_API_KEY",
		model: func(ctx context.Context, baseURL string, hc *http.Client) (pipeline.Model, error) {
			cfg := &genai.ClientConfig{APIKey: os.Getenv("GEMINI_API_KEY"), Backend: genai.BackendGeminiAPI}
			if hc != nil {
				cfg.APIKey, cfg.HTTPClient, cfg.HTTPOptions.BaseURL = "offline", hc, baseURL
			}
			client, err := genai.NewClient(ctx, cfg)
			if err != nil {
				return nil, err
			}
			return gemini.New(client, gemini.WithModel("gemini-2.5-flash")), nil
		},
	},
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "providers:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer) error {
	type weather struct {
		City string `json:"city"`
	}
	getWeather := tool.Func("get_weather", "Current weather in a city.", func(_ context.Context, in weather) (string, error) {
		return "sunny, 22C", nil
	})
	for _, p := range providers {
		var (
			model pipeline.Model
			err   error
		)
		if os.Getenv(p.env) != "" {
			model, err = p.model(ctx, "", nil)
		} else {
			srv := replay(p.name)
			defer srv.Close()
			model, err = p.model(ctx, srv.URL, srv.Client())
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		agent := &pipeline.Agent{
			Name:         "weather",
			Instructions: "Answer weather questions; use get_weather.",
			Model:        model,
			Tools:        []pipeline.Tool{getWeather},
		}
		res, err := pipeline.NewRunner().Run(ctx, agent, pipeline.UserInput("What is the weather in Paris?"))
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		fmt.Fprintf(w, "%s:\n", p.name)
		for _, it := range res.NewItems() {
			fmt.Fprintln(w, strings.TrimRight(fmt.Sprintf("  %-18s %s", it.Kind(), it.Name()), " "))
		}
		fmt.Fprintln(w, "  final output:", res.FinalOutput())
	}
	return nil
}

// replay serves testdata/<provider>_<n>.json to the n-th request.
func replay(name string) *httptest.Server {
	var (
		mu sync.Mutex
		n  int
	)
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		file := fmt.Sprintf("testdata/%s_%d.json", name, n)
		mu.Unlock()
		body, err := recorded.ReadFile(file)
		if err != nil {
			http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"no recorded reply"}}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
}
