package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"

	"github.com/turnkit/turnkit/internal/jsonscan"
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
	buf := bodyBufs.Get().(*[]byte)
	params, reqBody, err := m.params(c, (*buf)[:0])
	if err != nil {
		return nil, err
	}
	defer func() { // openai-go sent a copy of the body: keep its buffer for the next call
		if cap(reqBody) <= maxPooledBody {
			*buf = reqBody[:0]
			bodyBufs.Put(buf)
		}
	}()
	if c.Stream {
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

// params builds the request: its whole body, written as JSON into dst
// (chatBody), set on the params with param.SetJSON, and returns the body.
// No message is boxed or marshalled on its own; openai-go checks and
// compacts the body once, as it does the Responses adapter's input, into
// a buffer of its own: the body is garbage once the client call returns.
func (m *ChatModel) params(c *pipeline.ModelCall, dst []byte) (sdk.ChatCompletionNewParams, []byte, error) {
	var p sdk.ChatCompletionNewParams
	body, err := m.body(dst, c)
	if err != nil {
		return p, dst, err
	}
	param.SetJSON(body, &p)
	return p, body, nil
}

// bodyBufs keeps the buffers of request bodies between calls (see
// ChatModel.params), as *[]byte.
var bodyBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBody is the largest buffer bodyBufs keeps.
const maxPooledBody = 1 << 20

// body appends the request's body to dst: the members openai-go writes
// for the same request given as typed params, in its order (a streamed
// call's stream member excepted, which openStream sets).
func (m *ChatModel) body(dst []byte, c *pipeline.ModelCall) ([]byte, error) {
	name, err := m.cfg.modelName(c)
	if err != nil {
		return nil, err
	}
	itemsSize, err := chatCheck(c)
	if err != nil {
		return nil, err
	}
	o, s := &c.Output, &c.Settings
	size := 256 + len(name) + len(c.Instructions) + toolsSize(c.Tools) + len(o.Schema) + itemsSize
	b := slices.Grow(dst, size)
	b = append(b, `{"messages":`...)
	b = appendChatMessages(b, c.Instructions, c.Input)
	b = append(b, `,"model":`...)
	b = jsonw.AppendString(b, name)
	if s.MaxOutputTokens != nil {
		b = append(b, `,"max_completion_tokens":`...)
		b = strconv.AppendInt(b, *s.MaxOutputTokens, 10)
	}
	if m.cfg.store != nil {
		b = append(b, `,"store":`...)
		b = strconv.AppendBool(b, *m.cfg.store)
	}
	if s.Temperature != nil {
		if b, err = appendNumber(append(b, `,"temperature":`...), "temperature", *s.Temperature); err != nil {
			return nil, err
		}
	}
	if s.TopP != nil {
		if b, err = appendNumber(append(b, `,"top_p":`...), "top_p", *s.TopP); err != nil {
			return nil, err
		}
	}
	if s.ParallelToolCalls != nil && len(c.Tools) > 0 {
		b = append(b, `,"parallel_tool_calls":`...)
		b = strconv.AppendBool(b, *s.ParallelToolCalls)
	}
	if len(s.Metadata) > 0 {
		b = appendMetadata(append(b, `,"metadata":`...), s.Metadata)
	}
	if s.ReasoningEffort != "" {
		b = append(b, `,"reasoning_effort":`...)
		b = jsonw.AppendString(b, s.ReasoningEffort)
	}
	if c.Stream {
		b = append(b, `,"stream_options":{"include_usage":true}`...)
	}
	if o.Schema != nil {
		b = append(b, `,"response_format":`...)
		b = appendResponseFormat(b, o)
	}
	return append(appendChatTools(b, s.ToolChoice, c.Tools), '}'), nil
}

// appendMetadata appends metadata as a JSON object, its keys sorted.
func appendMetadata(b []byte, metadata map[string]string) []byte {
	b = append(b, '{')
	for i, k := range slices.Sorted(maps.Keys(metadata)) {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonw.AppendString(b, k)
		b = append(b, ':')
		b = jsonw.AppendString(b, metadata[k])
	}
	return append(b, '}')
}

// appendChatTools appends the body's tool_choice member, when choice is
// set (a mode, or the name of the function the model must call), and
// its tools member, when there are tools.
func appendChatTools(b []byte, choice string, tools []pipeline.ToolSpec) []byte {
	switch choice {
	case "":
	case "auto", "required", "none":
		b = append(b, `,"tool_choice":"`...)
		b = append(b, choice...)
		b = append(b, '"')
	default:
		b = append(b, `,"tool_choice":{"function":{"name":`...)
		b = jsonw.AppendString(b, choice)
		b = append(b, `},"type":"function"}`...)
	}
	if len(tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i, t := range tools {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendChatTool(b, t)
		}
		b = append(b, ']')
	}
	return b
}

// chatCheck refuses, before any of the body is written, what the Chat
// Completions API cannot take: input items it has no message for, hosted
// and custom tools, tool parameters and an output schema that are not
// valid JSON. It returns room for the input's messages (see
// chatExpressible), so that the body reads the items once before it
// writes them.
func chatCheck(c *pipeline.ModelCall) (int, error) {
	size, err := chatExpressible(c.Input)
	if err != nil {
		return 0, err
	}
	for _, t := range c.Tools {
		if len(t.Hosted) > 0 {
			return 0, fmt.Errorf("%w: hosted tool %q: Chat Completions has no hosted tools", ErrUnsupportedTool, t.Name)
		}
		if len(t.Custom) > 0 {
			return 0, fmt.Errorf("%w: custom tool %q: the chat adapter sends function tools only", ErrUnsupportedTool, t.Name)
		}
		if len(t.Parameters) > 0 && !jsonscan.Valid(t.Parameters) {
			return 0, fmt.Errorf("openai: tool %q: parameters are not valid JSON", t.Name)
		}
	}
	if c.Output.Schema != nil {
		return 0, checkOutput(&c.Output)
	}
	return size, nil
}

// appendNumber appends f as encoding/json writes a float64; NaN and the
// infinities, which JSON has no number for, are an error naming the
// setting.
func appendNumber(dst []byte, setting string, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, fmt.Errorf("openai: setting %s: %v is not a JSON number", setting, f)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if n := len(dst); format == 'e' && n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
		dst[n-2] = dst[n-1] // e-07 → e-7, as encoding/json writes it
		dst = dst[:n-1]
	}
	return dst, nil
}

// appendChatMessages appends the instructions and items as a JSON array
// of chat messages. An assistant message stays open while the calls that
// follow it join its tool_calls; the next message closes it.
func appendChatMessages(buf []byte, instructions string, items state.Items) []byte {
	buf = append(buf, '[')
	start := len(buf) // a message after this one is not the first: a comma before it
	if instructions != "" {
		buf = appendTextMessage(buf, "system", instructions)
	}
	open := false // an assistant message that calls may still join is open
	calls := 0
	for _, it := range items.All() {
		k := it.Kind()
		switch k {
		case state.KindToolCall, state.KindHandoffCall:
			if !open {
				buf = appendComma(buf, start)
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
			continue
		case state.KindUserMessage, state.KindSystemMessage, state.KindAssistantMessage, state.KindToolOutput, state.KindHandoffOutput:
		default:
			// Chat Completions takes no reasoning input; the opaque items
			// left by chatExpressible are another provider's own, and it
			// refused the other kinds.
			continue
		}
		if open {
			buf, open, calls = closeAssistant(buf, calls), false, 0
		}
		buf = appendComma(buf, start)
		switch k {
		case state.KindUserMessage:
			if msg, ok := appendUserParts(buf, it); ok {
				buf = msg
			} else {
				buf = appendTextMessage(buf, "user", it.Text())
			}
		case state.KindSystemMessage:
			buf = appendTextMessage(buf, "system", it.Text())
		case state.KindAssistantMessage:
			buf = append(buf, `{"role":"assistant","content":`...)
			buf = jsonw.AppendString(buf, it.Text())
			open = true
		case state.KindToolOutput, state.KindHandoffOutput:
			buf = append(buf, `{"role":"tool","tool_call_id":`...)
			buf = jsonw.AppendString(buf, it.CallID())
			buf = append(buf, `,"content":`...)
			buf = jsonw.AppendString(buf, it.Text())
			buf = append(buf, '}')
		}
	}
	if open {
		buf = closeAssistant(buf, calls)
	}
	return append(buf, ']')
}

// appendComma appends the comma before a message of the array whose first
// message starts at start, unless it is the first.
func appendComma(buf []byte, start int) []byte {
	if len(buf) > start {
		return append(buf, ',')
	}
	return buf
}

// closeAssistant closes an open assistant message, and its tool_calls
// when calls joined it.
func closeAssistant(buf []byte, calls int) []byte {
	if calls > 0 {
		buf = append(buf, ']')
	}
	return append(buf, '}')
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
// without them would not be the run's history. It returns room for the
// items' messages: each item's JSON and 32 bytes.
//
// It reads each item once, and its content parts only when the item has
// them (a user message's or an output's content given as a list): the
// items of a plain conversation cost a kind's test each.
func chatExpressible(items state.Items) (int, error) {
	size := 0
	for i, it := range items.All() {
		size += it.RawLen() + 32
		switch k := it.Kind(); k {
		case state.KindUserMessage:
			if _, err := chatParts(mediaParts(it)); err != nil {
				return 0, &InputError{Index: i, Kind: k, Part: -1, Reason: err.Error()}
			}
		case state.KindToolOutput, state.KindHandoffOutput:
			for j, p := range it.Content() {
				if p.Type() != "input_text" {
					return 0, &InputError{Index: i, Kind: k, CallID: it.CallID(), Part: j,
						Reason: "content part " + strconv.Itoa(j) + " is " + partName(p) + ": Chat Completions tool messages take text only"}
				}
			}
		case state.KindOpaque:
			if otherProvider(it, it.Raw()) {
				continue // not sent, as for the Responses API
			}
			fallthrough
		case state.KindHostedCall, state.KindMCPApprovalRequest, state.KindMCPApprovalResponse,
			state.KindCustomCall, state.KindCustomOutput:
			return 0, &InputError{Index: i, Kind: k, CallID: it.CallID(), Part: -1,
				Reason: "a " + k.String() + " (" + it.Name() + ") has no Chat Completions message"}
		}
	}
	return size, nil
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
