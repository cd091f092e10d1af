package anthropic

import (
	"context"
	"errors"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/turnkit/turnkit/model/internal/adapt"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// Errors wrapped by the errors the adapter returns; match them with
// errors.Is. Every failure of a model call other than a context error and
// a refused input ([*InputError]) is a [*pipeline.ModelError] whose Err
// wraps one of these or the client's own error.
var (
	// ErrIncompleteStream means a stream ended (or broke) before its
	// message_stop event: the response is lost and nothing was recorded.
	// It is retryable, though text deltas may already have reached the
	// consumer.
	ErrIncompleteStream = errors.New("anthropic: stream ended before the message completed")
	// ErrStreamFailed means the API sent an error event in a stream. It
	// is wrapped by [*StreamError].
	ErrStreamFailed = errors.New("anthropic: stream failed")
	// ErrMalformedResponse means a response body or event could not be
	// decoded. It is wrapped by [*DecodeError].
	ErrMalformedResponse = errors.New("anthropic: malformed response")
	// ErrUnsupportedItem means an input item or content part the Messages
	// API cannot take. It is wrapped by [*InputError].
	ErrUnsupportedItem = errors.New("anthropic: unsupported input item")
	// ErrUnsupportedTool means a tool the adapter cannot declare: a hosted
	// tool of another API, or a custom (freeform) tool.
	ErrUnsupportedTool = errors.New("anthropic: unsupported tool")
)

// An InputError reports an item of the model input that the Messages API
// cannot take, found before any request: a hosted call, an MCP approval
// or a custom tool call of the Responses API, an opaque item that did not
// come from Anthropic, or a content part (an image or a file given by
// the Files API ID of another provider, a file by URL that is not a PDF,
// an image type the API does not read). The call fails with it rather than
// send a history without the item. It wraps [ErrUnsupportedItem].
type InputError struct {
	// Index is the item's index in the model input (ModelCall.Input).
	Index int
	// Kind is the item's kind, and CallID its call ID when it has one.
	Kind   state.Kind
	CallID string
	// Part is the index of the content part refused, or -1 when the item
	// as a whole is.
	Part int
	// Reason says what the Messages API cannot take.
	Reason string
}

// Error says what failed, where, and why.
func (e *InputError) Error() string {
	return adapt.InputText("anthropic: ", e.Index, e.Kind, e.CallID, e.Part, e.Reason)
}

// Unwrap returns [ErrUnsupportedItem].
func (e *InputError) Unwrap() error { return ErrUnsupportedItem }

// A DecodeError reports a response that could not be turned into items:
// where it went wrong (for example "messages body" or "content[2]") and
// why. It wraps [ErrMalformedResponse].
type DecodeError struct {
	Where string
	Err   error
}

// Error says what failed, where, and why.
func (e *DecodeError) Error() string { return "anthropic: decode " + e.Where + ": " + e.Err.Error() }

// Unwrap returns [ErrMalformedResponse] and the cause.
func (e *DecodeError) Unwrap() []error { return []error{ErrMalformedResponse, e.Err} }

// A StreamError reports an error event of a stream, such as an
// overloaded_error sent after the response began. It wraps
// [ErrStreamFailed].
type StreamError struct {
	Type    string
	Message string
}

// Error says what failed, where, and why.
func (e *StreamError) Error() string {
	return "anthropic: stream error event: " + e.Type + ": " + e.Message
}

// Unwrap returns [ErrStreamFailed].
func (e *StreamError) Unwrap() error { return ErrStreamFailed }

// streamRetryable lists the error types of a stream's error event worth
// retrying.
func streamRetryable(typ string) bool {
	return typ == "overloaded_error" || typ == "api_error" || typ == "rate_limit_error"
}

// translate turns an error of the client or of decoding into turnkit's
// error, once, at this edge: a context error of ctx is returned as it is;
// an API error becomes a *pipeline.ModelError with its status, type and
// request ID; anything else becomes a *pipeline.ModelError too, retryable
// when no response arrived (a network failure) or the stream broke.
func translate(ctx context.Context, err error, status int, requestID string) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if apiErr, ok := errors.AsType[*sdk.Error](err); ok {
		me := &pipeline.ModelError{
			Status:    apiErr.StatusCode,
			Retryable: adapt.StatusRetryable(apiErr.Response, apiErr.StatusCode),
			RequestID: apiErr.RequestID,
			Code:      string(apiErr.Type()),
			Err:       &apiError{err: apiErr},
		}
		if me.RequestID == "" && apiErr.Response != nil {
			me.RequestID = apiErr.Response.Header.Get(requestIDHeader)
		}
		return me
	}
	me := &pipeline.ModelError{Status: status, RequestID: requestID, Err: err}
	switch se, isStream := errors.AsType[*StreamError](err); {
	case isStream:
		me.Code, me.Retryable = se.Type, streamRetryable(se.Type)
	case errors.Is(err, ErrIncompleteStream):
		me.Retryable = true
	case errors.Is(err, ErrMalformedResponse):
	default:
		me.Retryable = adapt.Transient(err)
		me.Err = fmt.Errorf("anthropic: messages: %w", err)
	}
	return me
}

// apiError adds the API's error type and message to the client's error,
// whose own text is the status line.
type apiError struct{ err *sdk.Error }

func (e *apiError) Error() string {
	return adapt.APIErrorText("anthropic: messages", e.err.StatusCode, string(e.err.Type()), e.err.Message)
}

func (e *apiError) Unwrap() error { return e.err }
