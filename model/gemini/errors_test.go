package gemini_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/genai"

	"github.com/turnkit/turnkit/model/gemini"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// call makes one model call straight through the adapter.
func call(t *testing.T, m pipeline.Model, stream bool, input ...state.Item) (*pipeline.ModelResponse, error) {
	t.Helper()
	return m.Respond(context.Background(), &pipeline.ModelCall{
		Input: state.ItemsOf(input), Stream: stream,
		Settings: pipeline.ModelSettings{Model: "gemini-2.5-flash"},
	})
}

const (
	errorBody = `{"error":{"code":%d,"message":"%s","status":"%s"}}`
	chunkText = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hel\"}],\"role\":\"model\"},\"index\":0}],\"responseId\":\"r1\"}\r\n\r\n"
)

// Each kind of failure is a *pipeline.ModelError with the status, the
// API's status name and whether a retry may help, in both modes.
func TestAPIErrors(t *testing.T) {
	tests := []struct {
		name          string
		give          reply
		wantStatus    int
		wantCode      string
		wantRetryable bool
		wantIs        error
	}{
		{name: "rate limited", give: reply{status: 429, body: `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`},
			wantStatus: 429, wantCode: "RESOURCE_EXHAUSTED", wantRetryable: true},
		{name: "overloaded", give: reply{status: 503, body: `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`},
			wantStatus: 503, wantCode: "UNAVAILABLE", wantRetryable: true},
		{name: "internal", give: reply{status: 500, body: `{"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}}`},
			wantStatus: 500, wantCode: "INTERNAL", wantRetryable: true},
		{name: "bad request", give: reply{status: 400, body: `{"error":{"code":400,"message":"Function call is missing a thought_signature in functionCall parts.","status":"INVALID_ARGUMENT"}}`},
			wantStatus: 400, wantCode: "INVALID_ARGUMENT"},
		{name: "bad key", give: reply{status: 403, body: `{"error":{"code":403,"message":"API key not valid.","status":"PERMISSION_DENIED"}}`},
			wantStatus: 403, wantCode: "PERMISSION_DENIED"},
		{name: "safety", give: reply{file: "safety.json"},
			wantStatus: 200, wantCode: "SAFETY", wantIs: gemini.ErrBlocked},
		{name: "prompt blocked", give: reply{file: "prompt_blocked.json"},
			wantStatus: 200, wantCode: "PROHIBITED_CONTENT", wantIs: gemini.ErrBlocked},
		{name: "malformed function call", give: reply{file: "malformed_call.json"},
			wantStatus: 200, wantCode: "MALFORMED_FUNCTION_CALL", wantRetryable: true, wantIs: gemini.ErrAbnormalFinish},
		{name: "no candidates", give: reply{body: `{"responseId":"r0","modelVersion":"gemini-2.5-flash"}`},
			wantStatus: 200, wantIs: gemini.ErrMalformedResponse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, tt.give)
			resp, err := call(t, gemini.New(srv.client()), false, state.UserMessage("hi"))
			if resp != nil {
				t.Errorf("response %+v with error %v, want nil", resp, err)
			}
			me, ok := errors.AsType[*pipeline.ModelError](err)
			if !ok {
				t.Fatalf("error %v (%T), want a *pipeline.ModelError", err, err)
			}
			if me.Status != tt.wantStatus || me.Code != tt.wantCode || me.Retryable != tt.wantRetryable {
				t.Errorf("ModelError{Status: %d, Code: %q, Retryable: %v}, want {%d, %q, %v}", me.Status, me.Code, me.Retryable, tt.wantStatus, tt.wantCode, tt.wantRetryable)
			}
			if !errors.Is(err, pipeline.ErrModel) {
				t.Errorf("error %v is not pipeline.ErrModel", err)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v is not %v", err, tt.wantIs)
			}
		})
	}
}

// The API's error reaches the caller as the client's genai.APIError too,
// with the message in the error's text.
func TestAPIErrorKeepsClientError(t *testing.T) {
	srv := newServer(t, reply{status: 429, body: `{"error":{"code":429,"message":"Quota exceeded for metric generate_content_free_tier_requests.","status":"RESOURCE_EXHAUSTED"}}`})
	_, err := call(t, gemini.New(srv.client()), false, state.UserMessage("hi"))
	apiErr, ok := errors.AsType[genai.APIError](err)
	if !ok || apiErr.Code != 429 {
		t.Fatalf("error %v: want a genai.APIError with code 429", err)
	}
	if want := "pipeline: model status 429: gemini: generateContent: 429 Too Many Requests: RESOURCE_EXHAUSTED: Quota exceeded for metric generate_content_free_tier_requests."; err.Error() != want {
		t.Errorf("error text\n %s\nwant\n %s", err, want)
	}
}

// A finish reason that blocks the answer is a *FinishError naming it.
func TestFinishError(t *testing.T) {
	srv := newServer(t, reply{file: "safety.json"}, reply{file: "safety.sse"})
	for _, stream := range []bool{false, true} {
		_, err := call(t, gemini.New(srv.client()), stream, state.UserMessage("hi"))
		fe, ok := errors.AsType[*gemini.FinishError](err)
		if !ok {
			t.Fatalf("stream=%v: error %v, want a *gemini.FinishError", stream, err)
		}
		want := gemini.FinishError{Agent: "", ResponseID: "sAfEtY0001", Reason: "SAFETY"}
		if *fe != want {
			t.Errorf("stream=%v: FinishError %+v, want %+v", stream, *fe, want)
		}
	}
}

// Errors of a stream: an error event in the stream, a stream cut before a
// finish reason, and an error status before any event.
func TestStreamErrors(t *testing.T) {
	tests := []struct {
		name          string
		give          reply
		wantStatus    int
		wantRetryable bool
		wantIs        error
	}{
		{name: "error event", give: reply{body: chunkText + `data: {"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}` + "\r\n\r\n"},
			wantStatus: 503, wantRetryable: true},
		{name: "cut short", give: reply{body: chunkText},
			wantStatus: 200, wantRetryable: true, wantIs: gemini.ErrIncompleteStream},
		{name: "status", give: reply{status: 429, body: `{"error":{"code":429,"message":"Resource has been exhausted.","status":"RESOURCE_EXHAUSTED"}}`},
			wantStatus: 429, wantRetryable: true},
		{name: "bad chunk", give: reply{body: chunkText + "data: {not json\r\n\r\n"},
			wantStatus: 200, wantRetryable: true, wantIs: gemini.ErrIncompleteStream},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, tt.give)
			m := gemini.New(srv.client())
			c := &pipeline.ModelCall{Input: state.ItemsOf([]state.Item{state.UserMessage("hi")}), Stream: true,
				Settings: pipeline.ModelSettings{Model: "gemini-2.5-flash"}}
			_, err := m.Respond(context.Background(), c)
			me, ok := errors.AsType[*pipeline.ModelError](err)
			if !ok {
				t.Fatalf("error %v (%T), want a *pipeline.ModelError", err, err)
			}
			if me.Status != tt.wantStatus || me.Retryable != tt.wantRetryable {
				t.Errorf("ModelError{Status: %d, Retryable: %v}, want {%d, %v}: %v", me.Status, me.Retryable, tt.wantStatus, tt.wantRetryable, err)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v is not %v", err, tt.wantIs)
			}
		})
	}
}

// Cancelling the context mid-stream returns the context's error, closes
// the connection and leaves no goroutine behind.
func TestCancelMidStream(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	srv := newServer(t, reply{file: "text.sse", stallAfter: 1})
	defer srv.srv.Close() // before the leak check: the server's goroutines are not the adapter's
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var deltas string
	agent := weatherAgent(gemini.New(srv.client()))
	var runErr error
	for ev, err := range pipeline.NewRunner().Stream(ctx, agent, pipeline.UserInput("What is the weather?")) {
		if err != nil {
			runErr = err
			break
		}
		if d, ok := ev.(pipeline.TextDelta); ok {
			deltas += d.Delta
			cancel()
		}
	}
	if !errors.Is(runErr, context.Canceled) {
		t.Fatalf("run error %v, want context.Canceled", runErr)
	}
	if _, ok := errors.AsType[*pipeline.ModelError](runErr); ok {
		t.Errorf("run error %v is a ModelError; a cancellation is the context's error", runErr)
	}
	if deltas != "It is sunny " {
		t.Errorf("deltas before the cancel = %q, want the first chunk's text", deltas)
	}
}

// A status the API sends is checked before anything else: a 429 is the
// only thing the run reports, and the run can be resumed.
func TestRetryableStatusKeepsRun(t *testing.T) {
	srv := newServer(t, reply{status: http.StatusTooManyRequests, body: `{"error":{"code":429,"message":"slow down","status":"RESOURCE_EXHAUSTED"}}`}, reply{file: "text.json"})
	agent := weatherAgent(gemini.New(srv.client()))
	runner := pipeline.NewRunner()
	res, err := runner.Run(context.Background(), agent, pipeline.UserInput("What is the weather?"))
	if me, ok := errors.AsType[*pipeline.ModelError](err); !ok || !me.Retryable {
		t.Fatalf("first run: error %v, want a retryable *pipeline.ModelError", err)
	}
	res, err = runner.Resume(context.Background(), agent, res.State())
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if want := "It is sunny in Paris and in Tokyo."; res.FinalOutput() != want {
		t.Errorf("final output after resume = %q, want %q", res.FinalOutput(), want)
	}
}

// The request ID of the response, when it has one, is the ModelError's,
// plain and streamed, though the client's error does not carry headers.
func TestRequestID(t *testing.T) {
	for _, stream := range []bool{false, true} {
		srv := newServer(t, reply{status: 503, header: http.Header{"X-Request-Id": {"req-7f3a"}},
			body: `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`})
		_, err := call(t, gemini.New(srv.client()), stream, state.UserMessage("hi"))
		me, ok := errors.AsType[*pipeline.ModelError](err)
		if !ok || me.RequestID != "req-7f3a" {
			t.Errorf("stream=%v: error %v, want a ModelError with request ID req-7f3a", stream, err)
		}
	}
}

// A blocked answer is a refusal too: an agent with an output type gets
// the runner's *pipeline.RefusalError.
func TestBlockedIsRefusal(t *testing.T) {
	srv := newServer(t, reply{file: "safety.json"})
	_, err := structuredRun(t, false, forecastAgent(gemini.New(srv.client())))
	re, ok := errors.AsType[*pipeline.RefusalError](err)
	if !ok {
		t.Fatalf("error %v, want a *pipeline.RefusalError", err)
	}
	// The client drops a candidate's finishMessage on the Gemini API: the
	// refusal is the reason.
	if re.Agent != "forecaster" || re.Refusal != "SAFETY" {
		t.Errorf("RefusalError %+v", re)
	}
	if !errors.Is(err, gemini.ErrBlocked) || !errors.Is(err, pipeline.ErrRefused) {
		t.Errorf("error %v: want ErrBlocked and pipeline.ErrRefused", err)
	}
}
