package bench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/tool/deferred"
)

// cannedResponse is a minimal completed Responses API response.
const cannedResponse = `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-5-mini",` +
	`"output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"ok","annotations":[]}]}],` +
	`"usage":{"input_tokens":1,"input_tokens_details":{"cached_tokens":0},"output_tokens":1,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":2}}`

// manyTools returns n function tools with a description and a schema of
// the size real ones have (a few properties, each described).
func manyTools(n int) []pipeline.Tool {
	out := make([]pipeline.Tool, n)
	for i := range out {
		name := fmt.Sprintf("operation_%03d", i)
		schema := fmt.Sprintf(`{"type":"object","properties":{`+
			`"resource_id":{"type":"string","description":"The ID of the resource %[1]s acts on."},`+
			`"region":{"type":"string","enum":["eu-west-1","us-east-1","ap-south-1"],"description":"Where the resource lives."},`+
			`"dry_run":{"type":"boolean","description":"Report what %[1]s would do without doing it."},`+
			`"reason":{"type":"string","description":"Why, for the audit log."}},`+
			`"required":["resource_id","region","dry_run","reason"],"additionalProperties":false}`, name)
		out[i] = pipeline.NewTool(pipeline.ToolSpec{
			Name:        name,
			Description: "Performs operation " + fmt.Sprint(i) + " on a resource.\nIt is audited, and it may take a minute; prefer a dry run first when unsure.",
			Parameters:  json.RawMessage(schema), Strict: true,
		}, func(context.Context, json.RawMessage) (string, error) { return "done", nil })
	}
	return out
}

// BenchmarkDeferred is the size of a model call's request to the
// Responses API (model/openai over an httptest server) for an agent with
// 200 tools: all sent, and deferred (tool/deferred) before any is loaded
// and with 3 loaded. It reports req-bytes/op, the request body's size.
func BenchmarkDeferred(b *testing.B) {
	var size atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		size.Store(n)
		w.Header().Set("content-type", "application/json")
		_, _ = io.WriteString(w, cannedResponse)
	}))
	defer srv.Close()
	client := sdk.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
	model := openai.New(client)
	hosted := openai.New(client, openai.WithHostedToolSearch())
	tools := manyTools(200)
	set := deferred.New(tools...)
	for _, tc := range []struct {
		name   string
		tools  []pipeline.Tool
		mws    []pipeline.Middleware
		loaded []string
		model  pipeline.Model // nil: model
	}{
		{name: "all-sent", tools: tools},
		{name: "deferred", tools: set.Tools(), mws: []pipeline.Middleware{set.Middleware()}},
		{name: "deferred-3-loaded", tools: set.Tools(), mws: []pipeline.Middleware{set.Middleware()}, loaded: []string{"operation_007", "operation_042", "operation_199"}},
		// The Responses API's own search: every definition is sent, with
		// defer_loading; what it saves is the model's context.
		{name: "hosted-search", tools: set.Tools(), mws: []pipeline.Middleware{set.Middleware()}, model: hosted},
	} {
		b.Run(fmt.Sprintf("tools=200/%s", tc.name), func(b *testing.B) {
			runner := pipeline.NewRunner(pipeline.WithMiddleware(tc.mws...))
			m := tc.model
			if m == nil {
				m = model
			}
			agent := &pipeline.Agent{Name: "ops", Model: m, Tools: tc.tools, Settings: pipeline.ModelSettings{Model: "gpt-5-mini"}}
			var opts []pipeline.RunOption
			if tc.loaded != nil {
				raw, _ := json.Marshal(tc.loaded)
				opts = append(opts, pipeline.WithExtension("turnkit.deferred", raw))
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := runner.Run(context.Background(), agent, pipeline.UserInput("Restart the payment service in eu-west-1."), opts...); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(size.Load()), "req-bytes/op")
		})
	}
}
