// Package adapt holds what the model adapters (model/openai,
// model/anthropic, model/gemini) share in translating a provider's
// failures at their edge: which failures a retry may cure, and the text
// of their errors. Each adapter keeps its own exported error types, which
// are its API; their methods call these.
package adapt

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"

	"github.com/turnkit/turnkit/state"
)

// Transient reports a connection or transport failure, which a retry may
// cure: a net.Error (every *url.Error the HTTP client returns is one) or a
// body cut short.
func Transient(err error) bool {
	if _, ok := errors.AsType[net.Error](err); ok {
		return true
	}
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// StatusRetryable follows the rule of the OpenAI and Anthropic clients: an
// x-should-retry header of res wins; otherwise 408, 409, 429 and 5xx are
// retryable. res may be nil.
func StatusRetryable(res *http.Response, status int) bool {
	if res != nil {
		switch res.Header.Get("x-should-retry") {
		case "true":
			return true
		case "false":
			return false
		}
	}
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= http.StatusInternalServerError
}

// InputText is the text of an adapter's InputError: prefix (such as
// "anthropic: "), then the item by index and kind, its call if callID is
// set, the content part if part is not negative, and the reason.
func InputText(prefix string, index int, kind state.Kind, callID string, part int, reason string) string {
	s := prefix + "input[" + strconv.Itoa(index) + "] (" + kind.String()
	if callID != "" {
		s += " of call " + callID
	}
	if part >= 0 {
		s += ", part " + strconv.Itoa(part)
	}
	return s + "): " + reason
}

// APIErrorText is the text of an error the API answered with: where (such
// as "openai: responses"), the HTTP status and its text, then the API's
// error type and message when they are set.
func APIErrorText(where string, status int, typ, message string) string {
	s := where + ": " + strconv.Itoa(status)
	if t := http.StatusText(status); t != "" {
		s += " " + t
	}
	if typ != "" {
		s += ": " + typ
	}
	if message != "" {
		s += ": " + message
	}
	return s
}
