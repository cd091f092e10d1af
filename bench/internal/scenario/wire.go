package scenario

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/turnkit/turnkit/middleware/compaction"
	"github.com/turnkit/turnkit/model/openai"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// What the conversation sends to the model, on the wire: with
// ConversationOptions.OpenAI the agent's model is model/openai's Responses
// adapter, and its requests go to fakeResponses, an in-process Responses
// API (no sockets) that counts the bytes of every request body and answers
// as the scripted model would (a call of the tool, then, once its output
// is in, a reply). It accepts previous_response_id and keeps nothing.

// fakeResponses is an http.RoundTripper that plays the Responses API.
type fakeResponses struct {
	mu    sync.Mutex
	n     int     // responses made
	calls []int64 // the body size of each request since the last take
}

// take returns the request sizes counted since the last take.
func (f *fakeResponses) take() []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.calls
	f.calls = nil
	return out
}

// RoundTrip answers one request.
func (f *fakeResponses) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	var in struct {
		Input []struct {
			Type string `json:"type"`
		} `json:"input"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("fake responses: request body: %w", err)
	}
	f.mu.Lock()
	f.n++
	n := strconv.Itoa(f.n)
	f.calls = append(f.calls, int64(len(body)))
	f.mu.Unlock()
	var item string
	if k := len(in.Input); k > 0 && in.Input[k-1].Type == "function_call_output" {
		item = `{"type":"message","id":"msg_` + n + `","role":"assistant","status":"completed","content":[{"type":"output_text","text":"done","annotations":[]}]}`
	} else {
		item = `{"type":"function_call","id":"fc_` + n + `","call_id":"call_` + n + `","name":"` + toolName + `","arguments":"{}","status":"completed"}`
	}
	resp := `{"id":"resp_` + n + `","object":"response","status":"completed","model":"bench","output":[` + item +
		`],"usage":{"input_tokens":1,"output_tokens":1,"input_tokens_details":{"cached_tokens":0},"output_tokens_details":{"reasoning_tokens":0}}}`
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(bytes.NewReader([]byte(resp))),
		ContentLength: int64(len(resp)), Request: req,
	}, nil
}

// wireModel returns the Responses adapter over f.
func wireModel(f *fakeResponses) pipeline.Model {
	client := sdk.NewClient(option.WithAPIKey("sk-bench"), option.WithBaseURL("http://fake.invalid/v1/"),
		option.WithHTTPClient(&http.Client{Transport: f}), option.WithMaxRetries(0))
	return openai.New(client, openai.WithModel("bench"))
}

// summaryText is what the conversation's summarizer writes: about 400
// bytes, whatever it summarises.
var summaryText = func() string {
	b := make([]byte, 0, 400)
	for len(b) < 400 {
		b = append(b, "the user asked questions and the tool answered ok; "...)
	}
	return string(b[:400])
}()

// summarizer is the compaction's model: a fixed summary, as a cheap model
// would write.
var summarizer = pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
	return &pipeline.ModelResponse{ID: "resp_summary", Items: []state.Item{state.AssistantMessage("", summaryText)}}, nil
})

// compactionMiddleware bounds the conversation's view at maxTokens
// estimated tokens.
func compactionMiddleware(maxTokens int) pipeline.Middleware {
	return compaction.Middleware(compaction.Summarize(summarizer), compaction.WithMaxTokens(maxTokens))
}
