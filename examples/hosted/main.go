// Command hosted runs an agent with OpenAI's hosted tools: web search, a
// remote MCP server (deepwiki) whose calls need approval, and a custom tool
// that takes freeform SQL. The run pauses on the MCP server's approval
// request, its checkpoint goes through JSON, the request is approved and
// the run resumes; the responses are chained on the server, so each call
// sends only the items the server has not seen. Every item the API
// returns, hosted calls and an item type turnkit does not know included,
// ends up in the session in model order.
//
//	go run ./examples/hosted
//
// Offline it serves recorded Responses API payloads from testdata to the
// real openai-go client; with OPENAI_API_KEY set it talks to OpenAI.
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

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/turnkit/turnkit/examples/internal/exmodel"
	"github.com/turnkit/turnkit/middleware/approval"
	"github.com/turnkit/turnkit/middleware/persistence"
	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tool"
)

//go:embed testdata/*.json
var recorded embed.FS

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "hosted:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer) error {
	client, settings, stop, err := pickClient()
	if err != nil {
		return err
	}
	defer stop()

	sql := tool.Text("run_sql", "Runs one read-only SQL statement on the turns database.",
		func(_ context.Context, query string) (string, error) {
			fmt.Fprintf(w, "run_sql got: %s\n", query)
			return "42", nil
		}, tool.Grammar("regex", `SELECT [^;]+;`))
	agent := &pipeline.Agent{
		Name:         "researcher",
		Instructions: "Search the web, ask deepwiki about turnkit/turnkit, and count turns with run_sql.",
		Model:        openai.New(client),
		Settings:     settings,
		Tools: []pipeline.Tool{
			openai.WebSearch(responses.WebSearchToolParam{}),
			openai.MCP(responses.ToolMcpParam{
				ServerLabel:     "deepwiki",
				ServerURL:       param.NewOpt("https://mcp.deepwiki.com/mcp"),
				AllowedTools:    responses.ToolMcpAllowedToolsUnionParam{OfMcpAllowedTools: []string{"ask_question"}},
				RequireApproval: responses.ToolMcpRequireApprovalUnionParam{OfMcpToolApprovalSetting: param.NewOpt("always")},
			}),
			sql,
		},
	}
	store := memory.New()
	runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store), approval.Require(nil)))

	res, err := runner.Run(ctx, agent, pipeline.UserInput("What is a turn in turnkit, and how many are stored?"),
		pipeline.WithSessionID("researcher-1"), openai.ChainResponses())
	if err != nil {
		return err
	}
	for res.Interrupted() {
		// Another process could do this part: the checkpoint is JSON.
		data, err := state.Marshal(res.State())
		if err != nil {
			return err
		}
		run, err := state.Unmarshal(data)
		if err != nil {
			return err
		}
		for _, a := range run.Pending() {
			fmt.Fprintf(w, "approve %s %s\n", a.Tool, a.Arguments)
			if err := run.Approve(a.CallID); err != nil {
				return err
			}
		}
		if res, err = runner.Resume(ctx, agent, run); err != nil {
			return err
		}
	}

	items, err := store.List(ctx, "researcher-1", 0)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "session:")
	for _, it := range items {
		fmt.Fprintln(w, strings.TrimRight(fmt.Sprintf("  %-22s %s", it.Kind(), it.Name()), " "))
	}
	fmt.Fprintln(w, "final output:", res.FinalOutput())
	return nil
}

// pickClient returns OpenAI's client when OPENAI_API_KEY is set, and
// otherwise a client of an in-process server that answers with the
// recorded responses, in order.
func pickClient() (sdk.Client, pipeline.ModelSettings, func(), error) {
	if exmodel.Live() {
		return sdk.NewClient(), exmodel.Settings(), func() {}, nil
	}
	names, err := recorded.ReadDir("testdata")
	if err != nil {
		return sdk.Client{}, pipeline.ModelSettings{}, nil, err
	}
	var (
		mu   sync.Mutex
		next int
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		n := next
		next++
		mu.Unlock()
		if n >= len(names) {
			http.Error(w, `{"error":{"message":"no recorded response left"}}`, http.StatusBadRequest)
			return
		}
		body, _ := recorded.ReadFile("testdata/" + names[n].Name())
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	client := sdk.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("offline"), option.WithHTTPClient(hc), option.WithMaxRetries(0))
	return client, pipeline.ModelSettings{Model: "gpt-5-mini"}, srv.Close, nil
}
