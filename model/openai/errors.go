package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	sdk "github.com/openai/openai-go/v3"

	"github.com/turnkit/turnkit/model/internal/adapt"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// Errors wrapped by the errors the adapters return; match them with
// errors.Is. Every failure of a model call other than a context error is
// returned as a [*pipeline.ModelError] whose Err wraps one of these or the
// client's own error.
var (
	// ErrIncompleteStream means a stream ended (or broke) before its
	// terminal event: the response is lost and nothing was recorded. It is
	// retryable, though text deltas may already have reached the consumer.
	ErrIncompleteStream = errors.New("openai: stream ended before the response completed")
	// ErrResponseFailed means the API reported the response as failed
	// (status "failed", or an error event in a stream). It is wrapped by
	// [*FailedError].
	ErrResponseFailed = errors.New("openai: response failed")
	// ErrMalformedResponse means a response body or event could not be
	// decoded. It is wrapped by [*DecodeError].
	ErrMalformedResponse = errors.New("openai: malformed response")
	// ErrUnsupportedItem means the model produced an output item turnkit
	// cannot record: a message whose role is not assistant (items of
	// types turnkit does not know are recorded as opaque items); it is
	// then wrapped by [*DecodeError]. [ChatModel] also returns it, before
	// any request, for input items Chat Completions cannot express,
	// wrapped by [*InputError].
	ErrUnsupportedItem = errors.New("openai: unsupported output item")
	// ErrUnsupportedTool means a tool cannot be sent to or run through the
	// API at hand: a hosted tool given to [ChatModel], or a hosted tool
	// called as a function.
	ErrUnsupportedTool = errors.New("openai: unsupported tool")
	// ErrUnsupportedSetting means a [ChatModel] was given an option of
	// the Responses API ([WithTruncation], [WithReasoningSummary],
	// [WithInclude]): its calls fail with it, before any request, rather
	// than leave the setting out.
	ErrUnsupportedSetting = errors.New("openai: unsupported setting")
)

// An InputError reports an item of the model input that [ChatModel] cannot
// send, found before any request: a hosted call, an opaque item, an MCP
// approval, a custom tool call or output, user content Chat Completions
// does not take, or a tool output with an image or a file. It wraps
// [ErrUnsupportedItem]; the model call fails with it (inside a
// [*pipeline.ModelError]) rather than send a history without the item.
type InputError struct {
	// Index is the item's index in the model input (ModelCall.Input).
	Index int
	// Kind is the item's kind, and CallID its call ID when it has one.
	Kind   state.Kind
	CallID string
	// Part is the index of the content part refused, or -1 when the item
	// as a whole is.
	Part int
	// Reason says what Chat Completions cannot take.
	Reason string
}

// Error names the input item by index and kind, its call, if any, and the reason.
func (e *InputError) Error() string {
	return adapt.InputText("openai: chat: ", e.Index, e.Kind, e.CallID, e.Part, e.Reason)
}

// Unwrap returns [ErrUnsupportedItem].
func (e *InputError) Unwrap() error { return ErrUnsupportedItem }

// A DecodeError reports a response that could not be turned into items:
// where it went wrong (for example "responses body" or "output[2]") and why.
type DecodeError struct {
	Where string
	Err   error
}

// Error names where in the response decoding failed, and the cause.
func (e *DecodeError) Error() string { return "openai: decode " + e.Where + ": " + e.Err.Error() }

// Unwrap returns the cause and [ErrMalformedResponse], unless the cause
// is [ErrUnsupportedItem] (the response was well formed).
func (e *DecodeError) Unwrap() []error {
	if errors.Is(e.Err, ErrUnsupportedItem) {
		return []error{e.Err}
	}
	return []error{ErrMalformedResponse, e.Err}
}

// A FailedError reports a response the API itself marked as failed.
type FailedError struct {
	ResponseID string
	Code       string
	Message    string
}

// Error names the response, its error code and message, as the API reported them.
func (e *FailedError) Error() string {
	s := "openai: response"
	if e.ResponseID != "" {
		s += " " + e.ResponseID
	}
	s += " failed"
	if e.Code != "" {
		s += ": " + e.Code
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Unwrap returns [ErrResponseFailed].
func (e *FailedError) Unwrap() error { return ErrResponseFailed }

// failedRetryable lists the response error codes worth retrying.
func failedRetryable(code string) bool {
	return code == "server_error" || code == "rate_limit_exceeded"
}

// translate turns an error of the client or of decoding into turnkit's
// error, once, at this edge: a context error of ctx is returned as it is;
// an API error becomes a *pipeline.ModelError with its status, code and
// request ID; anything else becomes a *pipeline.ModelError too, retryable
// when no response arrived (a network failure). api names the endpoint.
func translate(ctx context.Context, api string, err error, status int, requestID string) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if me, ok := errors.AsType[*pipeline.ModelError](err); ok {
		return me // already translated
	}
	if apiErr, ok := errors.AsType[*sdk.Error](err); ok {
		me := &pipeline.ModelError{
			Status:    apiErr.StatusCode,
			Retryable: adapt.StatusRetryable(apiErr.Response, apiErr.StatusCode),
			Code:      apiErr.Code,
			Err:       &apiError{api: api, err: apiErr},
		}
		if apiErr.Response != nil {
			me.RequestID = apiErr.Response.Header.Get("x-request-id")
			me.RetryAfter = retryAfter(apiErr.Response.Header, time.Now())
		}
		if me.Code == "" {
			me.Code = apiErr.Type
		}
		return me
	}
	me := &pipeline.ModelError{Status: status, RequestID: requestID, Err: err}
	switch fe, isFailed := errors.AsType[*FailedError](err); {
	case isFailed:
		me.Code, me.Retryable = fe.Code, failedRetryable(fe.Code)
	case errors.Is(err, ErrIncompleteStream):
		me.Retryable = true
	case errors.Is(err, ErrMalformedResponse), errors.Is(err, ErrUnsupportedItem):
	default:
		me.Retryable = adapt.Transient(err)
		me.Err = fmt.Errorf("openai: %s: %w", api, err)
	}
	return me
}

// retryAfter returns the wait the server asked for, as the client reads
// it: retry-after-ms (milliseconds), else Retry-After (seconds, or an HTTP
// date, relative to now); 0 when it asked for none or the value is not
// understood.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("retry-after")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// apiError adds the API's message to the client's error, whose own text
// is only the status line.
type apiError struct {
	api string
	err *sdk.Error
}

func (e *apiError) Error() string {
	return adapt.APIErrorText("openai: "+e.api, e.err.StatusCode, e.err.Type, e.err.Message)
}

func (e *apiError) Unwrap() error { return e.err }
