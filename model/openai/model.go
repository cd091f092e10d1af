package openai

import (
	"context"
	"net/http"
	"slices"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/turnkit/turnkit/pipeline"
)

// A Model is a [pipeline.Model] over the OpenAI Responses API, through an
// openai-go client. It holds only configuration fixed at construction, so
// one Model is safe for concurrent use by any number of runs.
//
// Respond sends the call's instructions, input items (their canonical JSON,
// as stored), tools and settings, and returns the output items in the order
// the model produced them. When the call streams it reads the server-sent
// events, emits a [pipeline.TextDelta] per text (or refusal) delta, and
// returns the same complete response a plain call returns.
//
// A nil error guarantees a non-nil response. A cancelled ctx returns the
// context's error, with the connection's body closed; every other failure
// is a [*pipeline.ModelError] (see the package documentation).
type Model struct {
	client sdk.Client
	cfg    config
}

var _ pipeline.Model = (*Model)(nil)

// New returns a Responses API model that sends its requests through
// client. Requests use the client's options (API key, base URL, HTTP
// client, retries), then the options given here.
func New(client sdk.Client, opts ...Option) *Model {
	return &Model{client: client, cfg: newConfig(opts)}
}

// Respond calls the Responses API for c. See [Model] for the contract.
func (m *Model) Respond(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
	srv, err := serverStateOf(c)
	if err != nil {
		return nil, err
	}
	// A chained call sends only what the server has not seen: its params
	// are built from that part of the input alone, not from the whole
	// input and then again.
	in := c.Input
	if srv != nil {
		in = srv.unseen(c)
	}
	params, err := m.params(c, in)
	if err != nil {
		return nil, err
	}
	if srv != nil {
		srv.link(&params)
		out, err := m.respond(ctx, c, params)
		if lost := previous(&params); err != nil && lost != "" && isContinuationLost(err) {
			// The stored response expired or was deleted: send the whole
			// input once, and say so.
			srv.restart(&params, c)
			c.Emit(pipeline.ContinuationLost{Turn: c.Turn.Number, ResponseID: lost})
			if out, err = m.respond(ctx, c, params); err == nil {
				out.ContinuationLost = lost
			}
		}
		if err == nil {
			srv.advance(c, out)
		}
		return out, err
	}
	return m.respond(ctx, c, params)
}

// respond sends the request, plain or streamed.
func (m *Model) respond(ctx context.Context, c *pipeline.ModelCall, params responses.ResponseNewParams) (*pipeline.ModelResponse, error) {
	if c.Stream {
		return m.stream(ctx, c, params)
	}
	var (
		body []byte
		res  *http.Response
	)
	_, err := m.client.Responses.New(ctx, params, m.cfg.requestOptions(option.WithResponseInto(&res), option.WithResponseBodyInto(&body))...)
	status, reqID := responseMeta(res)
	if err != nil {
		return nil, translate(ctx, apiResponses, err, status, reqID)
	}
	out, err := parseResponse(body)
	if err != nil {
		return nil, translate(ctx, apiResponses, err, status, reqID)
	}
	return out, nil
}

const (
	apiResponses = "responses"
	apiChat      = "chat.completions"
)

// requestOptions returns the configured request options followed by extra.
func (cfg *config) requestOptions(extra ...option.RequestOption) []option.RequestOption {
	return append(slices.Clip(cfg.reqOpts), extra...)
}

func responseMeta(res *http.Response) (status int, requestID string) {
	if res == nil {
		return 0, ""
	}
	return res.StatusCode, res.Header.Get("x-request-id")
}

// ProviderName reports "openai", the GenAI provider name tracing records
// (gen_ai.provider.name).
func (m *Model) ProviderName() string { return "openai" }
