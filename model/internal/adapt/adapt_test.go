package adapt

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"syscall"
	"testing"

	"github.com/turnkit/turnkit/state"
)

func TestTransient(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{&url.Error{Op: "Post", URL: "http://x", Err: errors.New("dial tcp: refused")}, true},
		{fmt.Errorf("read body: %w", io.ErrUnexpectedEOF), true},
		{fmt.Errorf("write: %w", syscall.ECONNRESET), true},
		{errors.New("bad request"), false},
		{io.EOF, false},
	}
	for _, tt := range tests {
		if got := Transient(tt.err); got != tt.want {
			t.Errorf("Transient(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestStatusRetryable(t *testing.T) {
	header := func(v string) *http.Response { return &http.Response{Header: http.Header{"X-Should-Retry": {v}}} }
	tests := []struct {
		res    *http.Response
		status int
		want   bool
	}{
		{nil, 408, true}, {nil, 409, true}, {nil, 429, true}, {nil, 500, true}, {nil, 529, true},
		{nil, 400, false}, {nil, 401, false}, {nil, 404, false},
		{header("false"), 503, false}, // the header wins
		{header("true"), 400, true},
		{header("maybe"), 400, false},
	}
	for _, tt := range tests {
		if got := StatusRetryable(tt.res, tt.status); got != tt.want {
			t.Errorf("StatusRetryable(%v, %d) = %v, want %v", tt.res != nil, tt.status, got, tt.want)
		}
	}
}

func TestTexts(t *testing.T) {
	tests := []struct{ got, want string }{
		{InputText("x: ", 3, state.KindToolCall, "call_1", -1, "no place for it"), "x: input[3] (tool_call of call call_1): no place for it"},
		{InputText("x: ", 0, state.KindUserMessage, "", 2, "an image by URL"), "x: input[0] (user_message, part 2): an image by URL"},
		{APIErrorText("x: messages", 429, "rate_limit_error", "slow down"), "x: messages: 429 Too Many Requests: rate_limit_error: slow down"},
		{APIErrorText("x: call", 599, "", ""), "x: call: 599"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
