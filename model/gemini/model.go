package gemini

import (
	"context"
	"fmt"

	"google.golang.org/genai"

	"github.com/turnkit/turnkit/pipeline"
)

// A Model is a [pipeline.Model] over the Gemini API's generateContent and
// streamGenerateContent methods, through a google.golang.org/genai
// client. It holds only configuration fixed at construction, so one Model
// is safe for concurrent use by any number of runs.
//
// Respond converts the call's instructions, input items, tools, output
// schema and settings into a request (refusing before any request what
// the API cannot take, see [InputError]), and returns the first
// candidate's parts as items in the order the model produced them. When
// the call streams it emits a [pipeline.TextDelta] per text chunk and
// returns the same complete response a plain call returns.
//
// A nil error guarantees a non-nil response. A cancelled ctx returns the
// context's error, with the stream's body closed; every other failure is
// a [*pipeline.ModelError] (see the package documentation).
type Model struct {
	client *genai.Client
	cfg    config
}

var _ pipeline.Model = (*Model)(nil)

// New returns a model that sends its requests through a client configured
// as client, which must not be nil: a copy of it whose HTTP transport also
// records each response's status and request ID (see the package
// documentation), or client itself when its configuration cannot be
// copied. Requests use the client's settings (API key, backend, base URL,
// HTTP client), then the options given here.
func New(client *genai.Client, opts ...Option) *Model {
	if client == nil {
		panic("gemini: New called with a nil client")
	}
	return &Model{client: recordingClient(client), cfg: newConfig(opts)}
}

// Respond calls the Gemini API for c. See [Model] for the contract.
func (m *Model) Respond(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
	req, err := m.buildRequest(c)
	if err != nil {
		return nil, &pipeline.ModelError{Err: err}
	}
	defer req.release()
	x := new(exchange)
	ctx = context.WithValue(ctx, exchangeKey{}, x)
	if c.Stream {
		return m.stream(ctx, c, req, x)
	}
	resp, err := m.client.Models.GenerateContent(ctx, req.model, req.contents, req.config)
	if err != nil {
		return nil, translate(ctx, err, x)
	}
	out, err := modelResponse(resp, agentName(c))
	if err != nil {
		return nil, translate(ctx, err, x)
	}
	return out, nil
}

func agentName(c *pipeline.ModelCall) string {
	if c.Agent == nil {
		return ""
	}
	return c.Agent.Name
}

// stream reads the chunks of streamGenerateContent: each text chunk is
// emitted as it arrives, and the chunks' parts are gathered into one
// response, converted as a plain one is.
func (m *Model) stream(ctx context.Context, c *pipeline.ModelCall, req *request, x *exchange) (*pipeline.ModelResponse, error) {
	var (
		all      genai.GenerateContentResponse
		cand     genai.Candidate
		content  genai.Content
		finished bool
		chunks   int
	)
	for chunk, err := range m.client.Models.GenerateContentStream(ctx, req.model, req.contents, req.config) {
		if err != nil {
			if !finished && chunks > 0 {
				err = fmt.Errorf("%w after %d chunks: %w", ErrIncompleteStream, chunks, err)
			}
			return nil, translate(ctx, err, x)
		}
		chunks++
		if chunk.ResponseID != "" {
			all.ResponseID = chunk.ResponseID
		}
		if chunk.ModelVersion != "" {
			all.ModelVersion = chunk.ModelVersion
		}
		if chunk.UsageMetadata != nil {
			all.UsageMetadata = chunk.UsageMetadata // each chunk's counts are the totals so far
		}
		if chunk.PromptFeedback != nil {
			all.PromptFeedback = chunk.PromptFeedback
			if chunk.PromptFeedback.BlockReason != "" {
				finished = true
			}
		}
		if len(chunk.Candidates) == 0 || chunk.Candidates[0] == nil {
			continue
		}
		cc := chunk.Candidates[0]
		if cc.Content != nil {
			for _, p := range cc.Content.Parts {
				if p != nil && isText(p) && !p.Thought && p.Text != "" {
					c.Emit(pipeline.TextDelta{Delta: p.Text})
				}
			}
			content.Parts = mergeText(content.Parts, cc.Content.Parts)
		}
		if cc.FinishReason != "" {
			cand.FinishReason, cand.FinishMessage = cc.FinishReason, cc.FinishMessage
			finished = true
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !finished {
		return nil, translate(ctx, fmt.Errorf("%w after %d chunks", ErrIncompleteStream, chunks), x)
	}
	if cand.FinishReason != "" || len(content.Parts) > 0 {
		content.Role = genai.RoleModel
		cand.Content = &content
		all.Candidates = []*genai.Candidate{&cand}
	}
	out, err := modelResponse(&all, agentName(c))
	if err != nil {
		return nil, translate(ctx, err, x)
	}
	return out, nil
}

// ProviderName reports "gcp.gemini", the GenAI provider name tracing
// records (gen_ai.provider.name).
func (m *Model) ProviderName() string { return "gcp.gemini" }
