package gemini

import (
	"context"
	"errors"
	"net/http"

	"google.golang.org/genai"

	"github.com/turnkit/turnkit/model/internal/adapt"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// Errors wrapped by the errors the adapter returns; match them with
// errors.Is. Every failure of a model call other than a context error is
// returned as a [*pipeline.ModelError] whose Err wraps one of these or the
// client's own error.
var (
	// ErrUnsupportedItem means an item of the model input cannot be sent
	// to the Gemini API (a hosted or custom tool call of another API, an
	// MCP approval, another API's opaque item, a file given by an OpenAI
	// file ID …). It is wrapped by [*InputError], returned before any
	// request.
	ErrUnsupportedItem = errors.New("gemini: unsupported input item")
	// ErrUnsupportedTool means a tool cannot be sent to the Gemini API: a
	// custom (freeform) tool, or a hosted tool whose declaration is not a
	// Gemini Tool object.
	ErrUnsupportedTool = errors.New("gemini: unsupported tool")
	// ErrUnsupportedSetting means a model setting has no Gemini
	// equivalent and ignoring it would change what the call means (a
	// tool choice naming a tool when the call offers none, an unknown
	// reasoning effort).
	ErrUnsupportedSetting = errors.New("gemini: unsupported setting")
	// ErrBlocked means the API blocked the prompt or the answer: a prompt
	// feedback block reason, or a finish reason such as SAFETY,
	// RECITATION, BLOCKLIST or PROHIBITED_CONTENT. It is wrapped by
	// [*FinishError].
	ErrBlocked = errors.New("gemini: response blocked")
	// ErrAbnormalFinish means the candidate ended for a reason that is
	// neither a normal stop, the token limit nor a block: a malformed or
	// unexpected function call, too many tool calls, and reasons added
	// after this release. It is wrapped by [*FinishError].
	ErrAbnormalFinish = errors.New("gemini: abnormal finish")
	// ErrIncompleteStream means a stream ended (or broke) before a chunk
	// with a finish reason: the response is lost and nothing was
	// recorded. It is retryable, though text deltas may already have
	// reached the consumer.
	ErrIncompleteStream = errors.New("gemini: stream ended before the response finished")
	// ErrMalformedResponse means a response could not be turned into
	// items (no candidate and no block reason, a part that does not
	// encode). It is wrapped by [*DecodeError].
	ErrMalformedResponse = errors.New("gemini: malformed response")
)

// An InputError reports an item of the model input that the Gemini API
// cannot take, found before any request. It wraps [ErrUnsupportedItem];
// the model call fails with it (inside a [*pipeline.ModelError]) rather
// than send a history without the item.
type InputError struct {
	// Index is the item's index in the model input (ModelCall.Input).
	Index int
	// Kind is the item's kind, and CallID its call ID when it has one.
	Kind   state.Kind
	CallID string
	// Part is the index of the content part refused, or -1 when the item
	// as a whole is.
	Part int
	// Reason says what the Gemini API cannot take.
	Reason string
}

func (e *InputError) Error() string {
	return adapt.InputText("gemini: ", e.Index, e.Kind, e.CallID, e.Part, e.Reason)
}

// Unwrap returns [ErrUnsupportedItem].
func (e *InputError) Unwrap() error { return ErrUnsupportedItem }

// A FinishError reports a response the API ended without an answer to
// record: the prompt was blocked (Prompt is true, Reason is the prompt
// feedback's block reason), or the candidate finished for a reason other
// than STOP or MAX_TOKENS. It wraps [ErrAbnormalFinish], or for the
// safety and policy reasons [ErrBlocked] and a [*pipeline.RefusalError]
// (the Gemini API's way to refuse: errors.Is(err, pipeline.ErrRefused)
// holds, and an agent with an output type sees a refusal as it would from
// another API) whose refusal is the message, or the reason when there is
// none (the client keeps no finish message on the Gemini API backend).
type FinishError struct {
	// Agent is the agent whose model call it was.
	Agent string
	// ResponseID is the response's ID, if it has one.
	ResponseID string
	// Reason is the finish reason or block reason, such as "SAFETY".
	Reason string
	// Message is the API's explanation, if any.
	Message string
	// Prompt reports that the prompt itself was blocked.
	Prompt bool
}

func (e *FinishError) Error() string {
	s := "gemini: response"
	if e.ResponseID != "" {
		s += " " + e.ResponseID
	}
	if e.Prompt {
		s += ": prompt blocked: " + e.Reason
	} else {
		s += " finished with " + e.Reason
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Unwrap returns [ErrBlocked] and a [*pipeline.RefusalError], or
// [ErrAbnormalFinish].
func (e *FinishError) Unwrap() []error {
	if e.Prompt || blockedReasons[e.Reason] {
		refusal := e.Message
		if refusal == "" {
			refusal = e.Reason
		}
		return []error{ErrBlocked, &pipeline.RefusalError{Agent: e.Agent, Refusal: refusal}}
	}
	return []error{ErrAbnormalFinish}
}

// blockedReasons lists the finish reasons that mean a block.
var blockedReasons = map[string]bool{
	string(genai.FinishReasonSafety):                 true,
	string(genai.FinishReasonRecitation):             true,
	string(genai.FinishReasonLanguage):               true,
	string(genai.FinishReasonBlocklist):              true,
	string(genai.FinishReasonProhibitedContent):      true,
	string(genai.FinishReasonSPII):                   true,
	string(genai.FinishReasonImageSafety):            true,
	string(genai.FinishReasonImageProhibitedContent): true,
	string(genai.FinishReasonImageRecitation):        true,
}

// A DecodeError reports a response that could not be turned into items:
// where it went wrong (for example "candidates[0].content.parts[2]") and
// why.
type DecodeError struct {
	Where string
	Err   error
}

func (e *DecodeError) Error() string { return "gemini: decode " + e.Where + ": " + e.Err.Error() }

// Unwrap returns [ErrMalformedResponse] and the cause.
func (e *DecodeError) Unwrap() []error { return []error{ErrMalformedResponse, e.Err} }

// translate turns an error of the client or of decoding into turnkit's
// error, once, at this edge: a context error of ctx is returned as it is;
// an API error becomes a *pipeline.ModelError with its HTTP status and
// status name; anything else becomes a *pipeline.ModelError too,
// retryable when no response arrived (a network failure) or a stream was
// cut. x holds the status and request ID of the response, if one arrived.
func translate(ctx context.Context, err error, x *exchange) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if me, ok := errors.AsType[*pipeline.ModelError](err); ok {
		return me
	}
	if apiErr, ok := asAPIError(err); ok {
		return &pipeline.ModelError{
			Status:    apiErr.Code,
			Retryable: statusRetryable(apiErr.Code),
			Code:      apiErr.Status,
			RequestID: x.requestID,
			Err:       &apiError{err: apiErr},
		}
	}
	me := &pipeline.ModelError{Status: x.status, RequestID: x.requestID, Err: err}
	switch fe, isFinish := errors.AsType[*FinishError](err); {
	case isFinish:
		me.Code = fe.Reason
		// A malformed function call is the model's sampling going wrong;
		// the same request may well succeed.
		me.Retryable = fe.Reason == string(genai.FinishReasonMalformedFunctionCall)
	case errors.Is(err, ErrIncompleteStream):
		me.Retryable = true
	case errors.Is(err, ErrMalformedResponse):
	default:
		me.Status = 0
		me.Retryable = adapt.Transient(err)
		me.Err = &callError{err: err}
	}
	return me
}

// asAPIError finds the client's API error, which it returns as a value.
func asAPIError(err error) (genai.APIError, bool) {
	if v, ok := errors.AsType[genai.APIError](err); ok {
		return v, true
	}
	if p, ok := errors.AsType[*genai.APIError](err); ok && p != nil {
		return *p, true
	}
	return genai.APIError{}, false
}

// statusRetryable reports the statuses worth retrying: 408, 429 and 5xx.
func statusRetryable(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests ||
		status >= http.StatusInternalServerError
}

// apiError adds the API's status name and message to the client's error.
type apiError struct{ err genai.APIError }

func (e *apiError) Error() string {
	return adapt.APIErrorText("gemini: generateContent", e.err.Code, e.err.Status, e.err.Message)
}

func (e *apiError) Unwrap() error { return e.err }

// callError names the adapter on a failure of the client that is not an
// API error (a network failure, a request the client could not build).
type callError struct{ err error }

func (e *callError) Error() string { return "gemini: generateContent: " + e.err.Error() }

func (e *callError) Unwrap() error { return e.err }
