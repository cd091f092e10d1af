package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/turnkit/turnkit/internal/jsonw"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// A ChatModel is a [pipeline.Model] over the Chat Completions API, which
// many OpenAI-compatible servers speak. Tools, settings, usage and errors
// map as for [Model]; the run's items are converted to chat messages:
// user and system messages, an assistant message carrying the tool calls
// that followed it, and one tool message per output. Reasoning items are
// not sent (the API has no place for them). A user message's images (by
// URL or data URL) and files (by ID or inline) become content parts;
// items and parts the API cannot express (hosted calls, opaque items, MCP
// approvals, custom tool calls, images by file ID, files by URL) fail the
// call before the request with an error wrapping [ErrUnsupportedItem]. A
// tool output made of content parts is sent as its text when all its parts
// are text; an image or a file in it fails the call the same way, naming
// the call and the part (Chat Completions' tool messages take text only).
//
// A ChatModel holds only configuration fixed at construction and is safe
// for concurrent use. The contract of Respond is the one of [Model].
type ChatModel struct {
	client sdk.Client
	cfg    config
	// unsupported is the error of a Responses API option given to
	// NewChat, found once; every call fails with it.
	unsupported error
}

var _ pipeline.Model = (*ChatModel)(nil)

// NewChat returns a Chat Completions model that sends its requests through
// client, with the client's options and then the options given here.
func NewChat(client sdk.Client, opts ...Option) *ChatModel {
	cfg := newConfig(opts)
	return &ChatModel{client: client, cfg: cfg, unsupported: cfg.chatUnsupported()}
}

// Respond calls the Chat Completions API for c. See [ChatModel].
func (m *ChatModel) Respond(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
	if m.unsupported != nil {
		return nil, m.unsupported
	}
	params, err := m.params(c)
	if err != nil {
		return nil, err
	}
	if c.Stream {
		params.StreamOptions.IncludeUsage = param.NewOpt(true)
		res, err := openStream(ctx, func(opts ...option.RequestOption) error {
			_, err := m.client.Chat.Completions.New(ctx, params, opts...)
			return err
		}, m.cfg.reqOpts)
		status, reqID := responseMeta(res)
		if err != nil {
			return nil, translate(ctx, apiChat, err, status, reqID)
		}
		out, err := readChatStream(res, c)
		if err != nil {
			return nil, translate(ctx, apiChat, err, status, reqID)
		}
		return out, nil
	}
	var (
		body []byte
		res  *http.Response
	)
	_, err = m.client.Chat.Completions.New(ctx, params, m.cfg.requestOptions(option.WithResponseInto(&res), option.WithResponseBodyInto(&body))...)
	status, reqID := responseMeta(res)
	if err != nil {
		return nil, translate(ctx, apiChat, err, status, reqID)
	}
	out, err := parseChat(body)
	if err != nil {
		return nil, translate(ctx, apiChat, err, status, reqID)
	}
	return out, nil
}

// params builds the request; each message is built as JSON once and
// passed through param.Override.
func (m *ChatModel) params(c *pipeline.ModelCall) (sdk.ChatCompletionNewParams, error) {
	var p sdk.ChatCompletionNewParams
	name, err := m.cfg.modelName(c)
	if err != nil {
		return p, err
	}
	p.Model = name
	if err := chatExpressible(c.Input); err != nil {
		return p, err
	}
	msgs := chatMessages(c.Instructions, c.Input)
	p.Messages = make([]sdk.ChatCompletionMessageParamUnion, len(msgs))
	for i, msg := range msgs {
		// Set in place: param.Override would allocate the union, which
		// escapes through its generic call, for each message.
		param.SetJSON(msg, &p.Messages[i])
	}
	if len(c.Tools) > 0 {
		p.Tools = make([]sdk.ChatCompletionToolUnionParam, len(c.Tools))
		buf := make([]byte, 0, toolsSize(c.Tools))
		for i, t := range c.Tools {
			if len(t.Hosted) > 0 {
				return p, fmt.Errorf("%w: hosted tool %q: Chat Completions has no hosted tools", ErrUnsupportedTool, t.Name)
			}
			if len(t.Custom) > 0 {
				return p, fmt.Errorf("%w: custom tool %q: the chat adapter sends function tools only", ErrUnsupportedTool, t.Name)
			}
			if len(t.Parameters) > 0 && !json.Valid(t.Parameters) {
				return p, fmt.Errorf("openai: tool %q: parameters are not valid JSON", t.Name)
			}
			start := len(buf)
			buf = appendChatTool(buf, t)
			param.SetJSON(buf[start:len(buf):len(buf)], &p.Tools[i])
		}
	}
	if o := &c.Output; o.Schema != nil {
		if err := checkOutput(o); err != nil {
			return p, err
		}
		p.ResponseFormat = param.Override[sdk.ChatCompletionNewParamsResponseFormatUnion](json.RawMessage(appendResponseFormat(nil, o)))
	}
	s := &c.Settings
	if s.Temperature != nil {
		p.Temperature = param.NewOpt(*s.Temperature)
	}
	if s.TopP != nil {
		p.TopP = param.NewOpt(*s.TopP)
	}
	if s.MaxOutputTokens != nil {
		p.MaxCompletionTokens = param.NewOpt(*s.MaxOutputTokens)
	}
	switch s.ToolChoice {
	case "":
	case "auto", "required", "none":
		p.ToolChoice.OfAuto = param.NewOpt(s.ToolChoice)
	default:
		p.ToolChoice.OfFunctionToolChoice = &sdk.ChatCompletionNamedToolChoiceParam{
			Function: sdk.ChatCompletionNamedToolChoiceFunctionParam{Name: s.ToolChoice},
		}
	}
	if s.ParallelToolCalls != nil && len(c.Tools) > 0 {
		p.ParallelToolCalls = param.NewOpt(*s.ParallelToolCalls)
	}
	if s.ReasoningEffort != "" {
		p.ReasoningEffort = shared.ReasoningEffort(s.ReasoningEffort)
	}
	if m.cfg.store != nil {
		p.Store = param.NewOpt(*m.cfg.store)
	}
	if len(s.Metadata) > 0 {
		p.Metadata = shared.Metadata(s.Metadata)
	}
	return p, nil
}

// chatMessages converts the instructions and items to chat messages, each
// one JSON object. All of them are written into one buffer, sized from the
// items' JSON, and returned as slices of it.
func chatMessages(instructions string, items state.Items) []json.RawMessage {
	n, size := 1, 64+len(instructions)
	for _, it := range items.All() {
		n++
		size += it.RawLen() + 32
	}
	buf := make([]byte, 0, size)
	ends := make([]int, 0, n) // where each message ends in buf
	if instructions != "" {
		buf = appendTextMessage(buf, "system", instructions)
		ends = append(ends, len(buf))
	}
	open := false // an assistant message that calls may still join is open
	calls := 0
	flush := func() {
		if !open {
			return
		}
		if calls > 0 {
			buf = append(buf, ']')
		}
		buf = append(buf, '}')
		ends = append(ends, len(buf))
		open, calls = false, 0
	}
	for _, it := range items.All() {
		switch it.Kind() {
		case state.KindUserMessage:
			flush()
			if msg, ok := appendUserParts(buf, it); ok {
				buf = msg
			} else {
				buf = appendTextMessage(buf, "user", it.Text())
			}
			ends = append(ends, len(buf))
		case state.KindSystemMessage:
			flush()
			buf = appendTextMessage(buf, "system", it.Text())
			ends = append(ends, len(buf))
		case state.KindAssistantMessage:
			flush()
			buf = append(buf, `{"role":"assistant","content":`...)
			buf = jsonw.AppendString(buf, it.Text())
			open = true
		case state.KindToolCall, state.KindHandoffCall:
			if !open {
				buf = append(buf, `{"role":"assistant","content":null`...)
				open = true
			}
			if calls == 0 {
				buf = append(buf, `,"tool_calls":[`...)
			} else {
				buf = append(buf, ',')
			}
			calls++
			buf = appendChatCall(buf, it)
		case state.KindToolOutput, state.KindHandoffOutput:
			flush()
			buf = append(buf, `{"role":"tool","tool_call_id":`...)
			buf = jsonw.AppendString(buf, it.CallID())
			buf = append(buf, `,"content":`...)
			buf = jsonw.AppendString(buf, it.Text())
			buf = append(buf, '}')
			ends = append(ends, len(buf))
		case state.KindReasoning, state.KindOpaque:
			// Chat Completions takes no reasoning input; the opaque items
			// left by chatExpressible are another provider's own.
		}
	}
	flush()
	return spans(buf, ends)
}

// appendChatCall appends a function call of an assistant message's
// tool_calls.
func appendChatCall(dst []byte, it state.Item) []byte {
	dst = append(dst, `{"id":`...)
	dst = jsonw.AppendString(dst, it.CallID())
	dst = append(dst, `,"type":"function","function":{"name":`...)
	dst = jsonw.AppendString(dst, it.Name())
	dst = append(dst, `,"arguments":`...)
	dst = jsonw.AppendString(dst, it.Text())
	return append(dst, `}}`...)
}

// spans cuts buf at ends into the messages written one after the other.
func spans(buf []byte, ends []int) []json.RawMessage {
	msgs := make([]json.RawMessage, len(ends))
	start := 0
	for i, end := range ends {
		msgs[i] = buf[start:end:end]
		start = end
	}
	return msgs
}

func appendTextMessage(dst []byte, role, text string) []byte {
	dst = append(dst, `{"role":"`...)
	dst = append(dst, role...)
	dst = append(dst, `","content":`...)
	dst = jsonw.AppendString(dst, text)
	return append(dst, '}')
}

// appendChatTool appends a Chat Completions function tool for t.
func appendChatTool(dst []byte, t pipeline.ToolSpec) []byte {
	dst = append(dst, `{"type":"function","function":{"name":`...)
	dst = jsonw.AppendString(dst, t.Name)
	if t.Description != "" {
		dst = append(dst, `,"description":`...)
		dst = jsonw.AppendString(dst, t.Description)
	}
	dst = append(dst, `,"parameters":`...)
	dst = appendParameters(dst, t.Parameters)
	if t.Strict {
		dst = append(dst, `,"strict":true}}`...)
	} else {
		dst = append(dst, `}}`...)
	}
	return dst
}

// chatBody is the part of a chat completion (or chunk) the adapter reads.
type chatBody struct {
	ID      string       `json:"id"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *chatUsage   `json:"usage"`
}

type chatChoice struct {
	Index        int         `json:"index"`
	Message      chatMessage `json:"message"`
	Delta        chatMessage `json:"delta"`
	FinishReason string      `json:"finish_reason"`
}

type chatMessage struct {
	Content   string         `json:"content"`
	Refusal   string         `json:"refusal"`
	ToolCalls []chatToolCall `json:"tool_calls"`
}

type chatToolCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func (u *chatUsage) usage() state.Usage {
	out := state.Usage{Requests: 1}
	if u != nil {
		out.InputTokens = u.PromptTokens
		out.OutputTokens = u.CompletionTokens
		out.CachedTokens = u.PromptTokensDetails.CachedTokens
		out.ReasoningTokens = u.CompletionTokensDetails.ReasoningTokens
	}
	return out
}

// parseChat decodes a chat completion, as encoding/json decodes it into
// a chatBody (see chunkView).
func parseChat(body []byte) (*pipeline.ModelResponse, error) {
	var v chunkView
	if err := v.read(body, false); err != nil {
		return nil, &DecodeError{Where: "chat.completions body", Err: err}
	}
	if len(v.choices) == 0 {
		return nil, &DecodeError{Where: "chat.completions body", Err: fmt.Errorf("no choices")}
	}
	msg := v.messageOf(&v.choices[0].message)
	items, err := chatItems(&msg)
	if err != nil {
		return nil, err
	}
	var usage *chatUsage
	if v.hasUsage {
		usage = &v.usage
	}
	return &pipeline.ModelResponse{ID: v.id.String(), Model: v.model.String(), Items: items, Usage: usage.usage()}, nil
}

// chatItems converts a choice's message: the message (or refusal) first,
// then its tool calls in order. Chat items carry no item IDs.
func chatItems(msg *chatMessage) ([]state.Item, error) {
	items := make([]state.Item, 0, 1+len(msg.ToolCalls))
	switch {
	case msg.Refusal != "":
		it, err := state.ParseItem(state.KindAssistantMessage, appendRefusal(nil, msg.Refusal))
		if err != nil {
			return nil, &DecodeError{Where: "choices[0].message.refusal", Err: err}
		}
		items = append(items, it)
	case msg.Content != "":
		items = append(items, state.AssistantMessage("", msg.Content))
	}
	for i, tc := range msg.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			return nil, &DecodeError{Where: fmt.Sprintf("choices[0].message.tool_calls[%d]", i), Err: fmt.Errorf("%w: type %q", ErrUnsupportedItem, tc.Type)}
		}
		if tc.ID == "" || tc.Function.Name == "" {
			return nil, &DecodeError{Where: fmt.Sprintf("choices[0].message.tool_calls[%d]", i), Err: fmt.Errorf("missing id or function name")}
		}
		items = append(items, state.ToolCall("", tc.ID, tc.Function.Name, tc.Function.Arguments))
	}
	return items, nil
}

// appendRefusal appends the Responses-API form of an assistant refusal.
func appendRefusal(dst []byte, refusal string) []byte {
	dst = append(dst, `{"type":"message","role":"assistant","status":"completed","content":[{"type":"refusal","refusal":`...)
	dst = jsonw.AppendString(dst, refusal)
	return append(dst, `}]}`...)
}

// ProviderName reports "openai", the GenAI provider name tracing records
// (gen_ai.provider.name).
func (m *ChatModel) ProviderName() string { return "openai" }

// chatExpressible refuses input items Chat Completions has no message for
// (hosted calls, opaque items, MCP approvals, custom tool calls), user
// content it cannot take (images by file ID, files by URL) and tool
// outputs with parts other than text, rather than dropping them: a request
// without them would not be the run's history.
func chatExpressible(items state.Items) error {
	for i, it := range items.All() {
		if it.Kind() == state.KindUserMessage {
			if _, err := chatParts(mediaParts(it)); err != nil {
				return &InputError{Index: i, Kind: it.Kind(), Part: -1, Reason: err.Error()}
			}
		}
		if it.Kind() == state.KindToolOutput || it.Kind() == state.KindHandoffOutput {
			for j, p := range it.Content() {
				if p.Type() != "input_text" {
					return &InputError{Index: i, Kind: it.Kind(), CallID: it.CallID(), Part: j,
						Reason: "content part " + strconv.Itoa(j) + " is " + partName(p) + ": Chat Completions tool messages take text only"}
				}
			}
		}
		if it.Kind() == state.KindOpaque && otherProvider(it, it.Raw()) {
			continue // not sent, as for the Responses API
		}
		switch it.Kind() {
		case state.KindHostedCall, state.KindOpaque, state.KindMCPApprovalRequest, state.KindMCPApprovalResponse,
			state.KindCustomCall, state.KindCustomOutput:
			return &InputError{Index: i, Kind: it.Kind(), CallID: it.CallID(), Part: -1,
				Reason: "a " + it.Kind().String() + " (" + it.Name() + ") has no Chat Completions message"}
		}
	}
	return nil
}

// partName names a content part's type for an error, with how an image
// or a file is given.
func partName(p state.ContentPart) string {
	switch p.Type() {
	case "":
		return "not a typed part"
	case "input_image":
		return "an image (input_image)"
	case "input_file":
		return "a file (input_file)"
	}
	return fmt.Sprintf("of type %q", p.Type())
}

// mediaParts returns the content parts of a user message whose content
// has parts other than text, and nil for any other message.
func mediaParts(it state.Item) []state.ContentPart {
	parts := it.Content()
	for _, p := range parts {
		if p.Type() != "input_text" {
			return parts
		}
	}
	return nil
}

// chatParts converts a user message's content parts to Chat Completions
// content parts; a part Chat Completions cannot take (an image by file
// ID, a file by URL) is an error.
func chatParts(parts []state.ContentPart) ([]any, error) {
	out := make([]any, 0, len(parts))
	for i, p := range parts {
		name, data := p.FileData()
		switch {
		case p.Type() == "input_text":
			out = append(out, map[string]any{"type": "text", "text": p.Text()})
		case p.Type() == "input_image" && p.URL() != "":
			img := map[string]any{"url": p.URL()}
			if p.Detail() != "" {
				img["detail"] = p.Detail()
			}
			out = append(out, map[string]any{"type": "image_url", "image_url": img})
		case p.Type() == "input_file" && p.FileID() != "":
			out = append(out, map[string]any{"type": "file", "file": map[string]any{"file_id": p.FileID()}})
		case p.Type() == "input_file" && data != "":
			out = append(out, map[string]any{"type": "file", "file": map[string]any{"file_data": data, "filename": name}})
		default:
			what := p.Type()
			switch {
			case p.URL() != "":
				what += " by URL"
			case p.FileID() != "":
				what += " by file ID"
			}
			return nil, fmt.Errorf("content part %d (%s): Chat Completions cannot take it", i, what)
		}
	}
	return out, nil
}

// appendUserParts appends a user message with content parts, when it has
// parts other than text and all of them convert.
func appendUserParts(dst []byte, it state.Item) ([]byte, bool) {
	media := mediaParts(it)
	if media == nil {
		return dst, false
	}
	parts, err := chatParts(media)
	if err != nil {
		return dst, false
	}
	b, err := json.Marshal(map[string]any{"role": "user", "content": parts})
	if err != nil {
		return dst, false
	}
	return append(dst, b...), true
}
