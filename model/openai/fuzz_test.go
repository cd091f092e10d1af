package openai

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/pipeline/pipelinetest"
	"github.com/turnkit/turnkit/state"
)

// FuzzResponseStream feeds arbitrary bytes to the Responses stream parser
// as a server-sent event body. It must never panic; a failure must be one
// of the adapter's typed errors (a *DecodeError, a *FailedError, or an
// error wrapping ErrIncompleteStream); a success must carry a response
// whose items are all valid, with a call ID on every call. The seed corpus
// is every recorded stream in testdata and testdata/fuzz/FuzzResponseStream.
func FuzzResponseStream(f *testing.F) {
	files, err := filepath.Glob("testdata/*.sse")
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		dec := ssestream.NewDecoder(sseResponse(body))
		if dec == nil {
			t.Fatal("no decoder for an event stream")
		}
		defer dec.Close()
		out, err := readResponseStream(dec, fuzzCall(t))
		if err != nil {
			checkAdapterError(t, out, err)
			return
		}
		checkResponse(t, out)
	})
}

// checkResponse fails t unless out is a response whose items are all
// valid, with a call ID on every call, and each item's JSON, which the
// run records and sends back to the model, parses again to the same
// item.
func checkResponse(t *testing.T, out *pipeline.ModelResponse) {
	t.Helper()
	if out == nil {
		t.Fatal("nil response and nil error")
	}
	for i, it := range out.Items {
		if !it.Kind().Valid() {
			t.Fatalf("item %d has an invalid kind", i)
		}
		if it.Kind().IsCall() && it.CallID() == "" {
			t.Fatalf("call item %d has no call ID: %s", i, it.Raw())
		}
		again, err := state.ParseItem(it.Kind(), it.Raw())
		if err != nil {
			t.Fatalf("item %d's JSON %s does not parse again: %v", i, it.Raw(), err)
		}
		if !again.Equal(it) || again.Text() != it.Text() {
			t.Fatalf("item %d parses again as %s, want %s", i, again, it)
		}
	}
}

// checkAdapterError fails t unless err is one of the adapter's typed
// errors: a *DecodeError, a *FailedError, or one wrapping
// ErrIncompleteStream.
func checkAdapterError(t *testing.T, out *pipeline.ModelResponse, err error) {
	t.Helper()
	if out != nil {
		t.Fatalf("a response returned with error %v", err)
	}
	var (
		de *DecodeError
		fe *FailedError
	)
	if !errors.As(err, &de) && !errors.As(err, &fe) && !errors.Is(err, ErrIncompleteStream) {
		t.Fatalf("untyped error %T: %v", err, err)
	}
}

// addFiles adds the files matching pattern to f's seed corpus.
func addFiles(f *testing.F, pattern string) {
	files, err := filepath.Glob(pattern)
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// FuzzParseResponse feeds arbitrary bytes to the Responses API body
// parser (a non-streamed response). It must never panic, fail only with
// the adapter's typed errors, and return items that parse again equal.
// The seed corpus is every recorded response in testdata.
func FuzzParseResponse(f *testing.F) {
	addFiles(f, "testdata/responses_*.json")
	addFiles(f, "testdata/malformed.json")
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := parseResponse(body)
		if err != nil {
			checkAdapterError(t, out, err)
			return
		}
		checkResponse(t, out)
	})
}

// FuzzParseChat feeds arbitrary bytes to the Chat Completions body
// parser, with FuzzParseResponse's properties. The seed corpus is every
// recorded chat completion in testdata.
func FuzzParseChat(f *testing.F) {
	addFiles(f, "testdata/chat_*.json")
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := parseChat(body)
		if err != nil {
			checkAdapterError(t, out, err)
			return
		}
		checkResponse(t, out)
	})
}

// FuzzChatStream feeds arbitrary bytes to the Chat Completions stream
// parser as a server-sent event body, with FuzzResponseStream's
// properties. The seed corpus is every recorded chat stream in testdata.
func FuzzChatStream(f *testing.F) {
	addFiles(f, "testdata/chat_*.sse")
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := readChatStream(sseResponse(body), fuzzCall(t))
		if err != nil {
			checkAdapterError(t, out, err)
			return
		}
		checkResponse(t, out)
	})
}

// sseResponse returns a 200 response whose body, body, is a server-sent
// event stream.
func sseResponse(body []byte) *http.Response {
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": []string{"text/event-stream"}},
		Body:       io.NopCloser(bytes.NewReader(body)),
	}
}

// fuzzCall returns a streaming model call whose deltas go to a log of
// their own, dropped with the call.
func fuzzCall(t *testing.T) *pipeline.ModelCall {
	turn := pipelinetest.NewTurn(t, pipelinetest.WithRun(state.NewRun("fuzz", "fuzz")),
		pipelinetest.WithAgent(&pipeline.Agent{Name: "fuzz"}), pipelinetest.WithEvents(&pipelinetest.EventLog{}))
	return pipelinetest.NewModelCall(t, turn)
}
