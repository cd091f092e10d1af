package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// A Model is a [pipeline.Model] over Anthropic's Messages API, through an
// anthropic-sdk-go client. It holds only configuration fixed at
// construction, so one Model is safe for concurrent use by any number of
// runs.
//
// Respond converts the call's instructions, input items, tools and
// settings into a Messages API request (see the package documentation for
// the mapping), sends it through the client, and returns the response's
// content blocks as items in the order the model produced them. When the
// call streams it reads the server-sent events, emits a
// [pipeline.TextDelta] per text delta (none when the call's events reach
// no consumer: see [pipeline.ModelCall.Streaming]), and returns the same
// complete response a plain call returns.
//
// A nil error guarantees a non-nil response. An input the API cannot take
// fails before any request with an [*InputError]; a cancelled ctx returns
// the context's error, with the connection's body closed; every other
// failure is a [*pipeline.ModelError].
type Model struct {
	client sdk.Client
	cfg    config
}

var _ pipeline.Model = (*Model)(nil)

// New returns a Messages API model that sends its requests through
// client. Requests use the client's options (API key, base URL, HTTP
// client, retries), then the options given here.
func New(client sdk.Client, opts ...Option) *Model {
	return &Model{client: client, cfg: newConfig(opts)}
}

// ProviderName reports "anthropic", the GenAI provider name tracing
// records (gen_ai.provider.name).
func (m *Model) ProviderName() string { return "anthropic" }

// Respond calls the Messages API for c. See [Model] for the contract.
func (m *Model) Respond(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
	req, err := m.build(c)
	if err != nil {
		return nil, err
	}
	if c.Stream {
		return m.stream(ctx, c, req)
	}
	timeout, err := sdk.CalculateNonStreamingTimeout(int(req.maxTokens), sdk.Model(req.model), m.cfg.withClient(m.client))
	if err != nil {
		return nil, translate(ctx, err, 0, "")
	}
	var (
		body []byte
		res  *http.Response
	)
	err = m.post(ctx, req, &body, option.WithRequestTimeout(timeout), option.WithResponseInto(&res))
	status, reqID := responseMeta(res)
	if err != nil {
		return nil, translate(ctx, err, status, reqID)
	}
	out, err := parseMessage(body, req.outputTool)
	if err != nil {
		return nil, translate(ctx, err, status, reqID)
	}
	return out, nil
}

// post sends the request's body, as built, to the Messages API through
// the client (its API key, base URL, HTTP client, retries and errors),
// with the configured request options, then extra; dst takes the response
// as the SDK's Post does. The SDK's Messages.New would marshal the body
// again, compacting what build wrote compact; Post sends the bytes.
func (m *Model) post(ctx context.Context, r request, dst any, extra ...option.RequestOption) error {
	return m.client.Post(ctx, "v1/messages", r.body, dst, m.cfg.requestOptions(extra...)...)
}

// withClient returns the client's options followed by the configured ones:
// those the SDK reads to choose a plain call's timeout.
func (cfg *config) withClient(client sdk.Client) []option.RequestOption {
	if len(cfg.reqOpts) == 0 {
		return client.Options // read only: no copy needed
	}
	return slices.Concat(client.Options, cfg.reqOpts)
}

// requestOptions returns the configured request options followed by extra.
func (cfg *config) requestOptions(extra ...option.RequestOption) []option.RequestOption {
	if len(cfg.reqOpts) == 0 {
		return extra
	}
	return append(slices.Clip(cfg.reqOpts), extra...)
}

// requestIDHeader is the response header that carries the request ID,
// "request-id", in its canonical form, which Header.Get finds without
// canonicalizing (an allocation) first.
const requestIDHeader = "Request-Id"

func responseMeta(res *http.Response) (status int, requestID string) {
	if res == nil {
		return 0, ""
	}
	return res.StatusCode, res.Header.Get(requestIDHeader)
}

// messageBody is the part of a Messages API response the adapter reads.
type messageBody struct {
	ID         string    `json:"id"`
	Model      string    `json:"model"`
	StopReason string    `json:"stop_reason"`
	Content    []block   `json:"content"`
	Usage      usageBody `json:"usage"` // a value: one allocation less than a pointer
}

type usageBody struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokensDetails      struct {
		ThinkingTokens int64 `json:"thinking_tokens"`
	} `json:"output_tokens_details"`
}

// usage converts the API's usage: input tokens count every input token,
// those read from and written to the cache included (the API counts
// them apart); cached tokens are those read from the cache, cache-write
// tokens those written to it (cache_creation_input_tokens).
func (u *usageBody) usage() state.Usage {
	out := state.Usage{Requests: 1}
	if u != nil {
		out.InputTokens = u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
		out.CachedTokens = u.CacheReadInputTokens
		out.CacheWriteTokens = u.CacheCreationInputTokens
		out.OutputTokens = u.OutputTokens
		out.ReasoningTokens = u.OutputTokensDetails.ThinkingTokens
	}
	return out
}

// parseMessage reads a Messages API body: with readMessage when it is
// written as the API writes it, with encoding/json otherwise (see
// [parseMessageJSON]).
//
// A tool_use of outputTool (see [WithOutputTool]) becomes the assistant
// message that carries the structured output.
func parseMessage(body []byte, outputTool string) (*pipeline.ModelResponse, error) {
	var buf [4]block // room for the usual blocks: text, a call or two
	r, blocks, ok := readMessage(body, buf[:0])
	if !ok {
		return parseMessageJSON(body, outputTool)
	}
	items, err := responseItems(r.ID, blocks, r.StopReason, outputTool)
	if err != nil {
		return nil, err
	}
	return &pipeline.ModelResponse{ID: r.ID, Model: r.Model, Items: items, Usage: r.Usage.usage()}, nil
}

// parseMessageJSON decodes a Messages API response body with
// encoding/json in one pass, its content blocks straight into blocks.
// Only a body with a block of a type kept opaque is read again, for that
// block's JSON.
func parseMessageJSON(body []byte, outputTool string) (*pipeline.ModelResponse, error) {
	// Room for the usual blocks (text, a call or two), which encoding/json
	// fills in place instead of growing the slice block by block.
	r := messageBody{Content: make([]block, 0, 4)}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, &DecodeError{Where: "messages body", Err: err}
	}
	for i := range r.Content {
		if !r.Content[i].known() {
			if err := keepOpaque(body, r.Content); err != nil {
				return nil, err
			}
			break
		}
	}
	items, err := responseItems(r.ID, r.Content, r.StopReason, outputTool)
	if err != nil {
		return nil, err
	}
	return &pipeline.ModelResponse{ID: r.ID, Model: r.Model, Items: items, Usage: r.Usage.usage()}, nil
}

// keepOpaque reads body's content again as JSON values and keeps, in each
// block of a type the adapter does not read, its JSON.
func keepOpaque(body []byte, blocks []block) error {
	var r struct {
		Content []json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(body, &r); err != nil || len(r.Content) != len(blocks) {
		return &DecodeError{Where: "messages body", Err: fmt.Errorf("content read again differs: %v", err)}
	}
	for i := range blocks {
		if !blocks[i].known() {
			blocks[i].raw = r.Content[i]
		}
	}
	return nil
}
