package anthropic_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/turnkit/turnkit/model/anthropic"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/tracing"
)

// rawServer answers every request with status, content type and body.
func rawServer(t *testing.T, status int, contentType, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Request-Id", "req_011CSHoEeqs5C35K2UUqR7Fy")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestStreamErrorEvent: an error event after the stream began (the
// documented overloaded_error) is a retryable *pipeline.ModelError with
// the error's type as its code, wrapping a *StreamError.
func TestStreamErrorEvent(t *testing.T) {
	srv := rawServer(t, http.StatusOK, "text/event-stream",
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n"+
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"+
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n"+
			"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n")
	m := anthropic.New(clientAt(srv.URL, srv.Client()), anthropic.WithModel("claude-sonnet-4-5"))
	call := &pipeline.ModelCall{Agent: &pipeline.Agent{Name: "a"}, Input: itemsOf("hi"), Stream: true}
	_, err := m.Respond(context.Background(), call)
	me, ok := errors.AsType[*pipeline.ModelError](err)
	if !ok {
		t.Fatalf("err = %v, want a *pipeline.ModelError", err)
	}
	se, ok := errors.AsType[*anthropic.StreamError](err)
	if !ok || se.Type != "overloaded_error" || !errors.Is(err, anthropic.ErrStreamFailed) {
		t.Errorf("err = %v, want a *StreamError of type overloaded_error", err)
	}
	if !me.Retryable || me.Code != "overloaded_error" || me.Status != http.StatusOK || me.RequestID != "req_011CSHoEeqs5C35K2UUqR7Fy" {
		t.Errorf("ModelError %+v", me)
	}
}

// TestOverloaded529: the API's 529 overloaded_error is retryable, with the
// error type as the code and the request-id header as the request ID.
func TestOverloaded529(t *testing.T) {
	srv := rawServer(t, 529, "application/json",
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`)
	m := anthropic.New(clientAt(srv.URL, srv.Client()), anthropic.WithModel("claude-sonnet-4-5"))
	for _, stream := range []bool{false, true} {
		_, err := m.Respond(context.Background(), &pipeline.ModelCall{Agent: &pipeline.Agent{Name: "a"}, Input: itemsOf("hi"), Stream: stream})
		me, ok := errors.AsType[*pipeline.ModelError](err)
		if !ok {
			t.Fatalf("stream %v: err = %v, want a *pipeline.ModelError", stream, err)
		}
		if me.Status != 529 || !me.Retryable || me.Code != "overloaded_error" || me.RequestID != "req_011CSHoEeqs5C35K2UUqR7Fy" {
			t.Errorf("stream %v: ModelError %+v", stream, me)
		}
	}
}

// TestProviderNameOnSpans: the model call's span says
// gen_ai.provider.name "anthropic", with no tracing option naming it.
func TestProviderNameOnSpans(t *testing.T) {
	srv := newFakeServer(t, "final.json")
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	agent := &pipeline.Agent{Name: "a", Model: anthropic.New(srv.client(), anthropic.WithModel("claude-sonnet-4-5"))}
	r := pipeline.NewRunner(pipeline.WithMiddleware(tracing.Middleware(tracing.WithTracerProvider(tp))))
	if _, err := r.Run(context.Background(), agent, pipeline.UserInput("hi")); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range rec.Ended() {
		if !strings.HasPrefix(s.Name(), "chat") {
			continue
		}
		for _, kv := range s.Attributes() {
			if kv.Key == "gen_ai.provider.name" {
				found = kv.Value.AsString() == "anthropic"
			}
		}
	}
	if !found {
		var names []string
		for _, s := range rec.Ended() {
			names = append(names, s.Name())
		}
		t.Errorf("no chat span with gen_ai.provider.name=anthropic among %v", names)
	}
}

func itemsOf(text string) state.Items { return state.ItemsOf(pipeline.UserInput(text)) }
