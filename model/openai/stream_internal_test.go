package openai

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"testing"

	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/pipeline/pipelinetest"
)

// TestSkippable checks which events the Responses stream reader leaves
// undecoded: those it does nothing with, known from a leading, unescaped
// type; text deltas only when nobody reads the call's events.
func TestSkippable(t *testing.T) {
	for _, tc := range []struct {
		data      string
		streaming bool
		want      bool
	}{
		{`{"type":"response.created","response":{}}`, true, true},
		{`{"type":"response.function_call_arguments.delta","delta":"x"}`, true, true},
		{`{"type":"response.output_text.delta","delta":"x"}`, true, false},
		{`{"type":"response.output_text.delta","delta":"x"}`, false, true},
		{`{"type":"response.refusal.delta","delta":"x"}`, true, false},
		{`{"type":"response.output_item.done","item":{}}`, false, false},
		{`{"type":"response.completed","response":{}}`, false, false},
		{`{"type":"response.incomplete","response":{}}`, false, false},
		{`{"type":"response.failed","response":{}}`, false, false},
		{`{"type":"error","message":"x"}`, false, false},
		{`{"type":"response.web_search_call.searching","item_id":"ws_1"}`, false, false},
		{`{"type":"response.code_interpreter_call_code.delta","delta":"x"}`, false, true},
		{`{"type":"","response":{}}`, false, false},                        // the SSE event's type applies
		{`{"type":"response.complet\u0065d","response":{}}`, false, false}, // escaped
		{`{"response":{},"type":"response.created"}`, false, false},        // type not first
		{`{"type":"response.created`, false, false},
	} {
		if got := skippable([]byte(tc.data), tc.streaming); got != tc.want {
			t.Errorf("skippable(%s, streaming %v) = %v, want %v", tc.data, tc.streaming, got, tc.want)
		}
	}
}

// TestSkippedEventInvalid checks that an event left undecoded must still
// be JSON: a stream with a broken one fails with a *DecodeError.
func TestSkippedEventInvalid(t *testing.T) {
	body := "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\n\n" +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"status\":\"completed\",\"output\":[]}}\n\n"
	res := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader([]byte(body)))}
	dec := ssestream.NewDecoder(res)
	defer dec.Close()
	_, err := readResponseStream(dec, &pipeline.ModelCall{Stream: true})
	var de *DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("got %v, want a *DecodeError", err)
	}
}

// TestStreamWithoutConsumer checks that a stream read for a call whose
// events reach nobody (its text deltas not decoded) returns the response
// a consumer's call returns.
func TestStreamWithoutConsumer(t *testing.T) {
	data, err := os.ReadFile("testdata/stream_text.sse")
	if err != nil {
		t.Fatal(err)
	}
	read := func(c *pipeline.ModelCall) *pipeline.ModelResponse {
		res := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(data))}
		dec := ssestream.NewDecoder(res)
		defer dec.Close()
		out, err := readResponseStream(dec, c)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	log := &pipelinetest.EventLog{}
	c := pipelinetest.NewModelCall(t, pipelinetest.NewTurn(t, pipelinetest.WithEvents(log)))
	c.Stream = true
	with, without := read(c), read(&pipeline.ModelCall{Stream: true})
	var deltas []string
	for _, ev := range log.Events() {
		if d, ok := ev.(pipeline.TextDelta); ok {
			deltas = append(deltas, d.Delta)
		}
	}
	if len(deltas) != 2 || deltas[0] != "Hi" || deltas[1] != " there!" {
		t.Errorf("the consumer got %q", deltas)
	}
	if with.ID != without.ID || len(with.Items) != 1 || len(without.Items) != 1 || !with.Items[0].Equal(without.Items[0]) {
		t.Errorf("without a consumer %+v, with one %+v", without, with)
	}
}
