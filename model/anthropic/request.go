package anthropic

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/turnkit/turnkit/internal/jsonscan"
	"github.com/turnkit/turnkit/internal/jsonw"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// emptySchema is the input schema of a tool that takes no arguments.
const emptySchema = `{"type":"object","properties":{}}`

// request is a built request: its JSON body and the fields the client
// reads itself.
type request struct {
	body       []byte
	model      string
	maxTokens  int64
	outputTool string // the tool that carries the structured output, or ""
}

// build builds the request body for c, as one JSON object written once.
// The input items are converted in order; what the API cannot take fails
// the call here, before any request.
func (m *Model) build(c *pipeline.ModelCall) (request, error) {
	cfg := &m.cfg
	r, err := cfg.limits(c)
	if err != nil {
		return r, err
	}
	b := make([]byte, 0, 512+estimate(c.Input))
	b = append(b, `{"model":`...)
	b = jsonw.AppendString(b, r.model)
	b = append(b, `,"max_tokens":`...)
	b = strconv.AppendInt(b, r.maxTokens, 10) // fmt would box it: an allocation
	b = cfg.appendSystem(b, c)
	b = append(b, `,"messages":`...)
	if b, err = cfg.appendMessages(b, c.Input); err != nil {
		return r, err
	}
	if r.outputTool, err = cfg.outputToolName(c); err != nil {
		return r, err
	}
	if b, err = cfg.appendTools(b, c, r.outputTool); err != nil {
		return r, err
	}
	if cfg.thinking > 0 {
		b = append(b, `,"thinking":{"type":"enabled","budget_tokens":`...)
		b = append(strconv.AppendInt(b, cfg.thinking, 10), '}')
	}
	if o := &c.Output; o.Schema != nil {
		if !jsonscan.Valid(o.Schema) {
			return r, fmt.Errorf("anthropic: output %q: schema is not valid JSON", o.Name)
		}
		if r.outputTool == "" {
			b = append(b, `,"output_config":{"format":{"type":"json_schema","schema":`...)
			b = append(b, o.Schema...)
			b = append(b, `}}`...)
		}
	}
	if uid := c.Settings.Metadata["user_id"]; uid != "" {
		b = append(b, `,"metadata":{"user_id":`...)
		b = jsonw.AppendString(b, uid)
		b = append(b, '}')
	}
	if c.Stream {
		b = append(b, `,"stream":true`...)
	}
	r.body = append(b, '}')
	return r, nil
}

// limits returns the request's model name and max_tokens for c: the
// agent's settings over the adapter's options. A call with no model name,
// or a thinking budget not below max_tokens, fails.
func (cfg *config) limits(c *pipeline.ModelCall) (request, error) {
	var r request
	switch {
	case c.Settings.Model != "":
		r.model = c.Settings.Model
	case cfg.model != "":
		r.model = cfg.model
	default:
		agent := ""
		if c.Agent != nil {
			agent = c.Agent.Name
		}
		return r, fmt.Errorf("anthropic: agent %q has no model name: set Agent.Settings.Model or use WithModel", agent)
	}
	r.maxTokens = cfg.maxTokens
	if mt := c.Settings.MaxOutputTokens; mt != nil {
		r.maxTokens = *mt
	}
	if cfg.thinking > 0 && cfg.thinking >= r.maxTokens {
		return r, fmt.Errorf("anthropic: thinking budget %d must be below max_tokens %d", cfg.thinking, r.maxTokens)
	}
	return r, nil
}

// appendSystem appends the request's system blocks: the agent's
// instructions, then the text of every system message in the input (the
// Messages API takes them apart from the messages), the last one with the
// cache breakpoint when CacheSystem is on. Nothing when there are none.
func (cfg *config) appendSystem(b []byte, c *pipeline.ModelCall) []byte {
	var sys []string
	if c.Instructions != "" {
		sys = append(sys, c.Instructions)
	}
	for _, it := range c.Input.All() {
		if it.Kind() == state.KindSystemMessage && it.Text() != "" {
			sys = append(sys, it.Text())
		}
	}
	if len(sys) == 0 {
		return b
	}
	b = append(b, `,"system":[`...)
	for i, s := range sys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"text","text":`...)
		b = jsonw.AppendString(b, s)
		if i == len(sys)-1 && cfg.cache[CacheSystem] {
			b = cfg.appendCacheControl(b)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendTools appends the request's tools and tool_choice: the output
// tool outTool first when structured output goes through one, then the
// agent's tools, the last with the cache breakpoint when CacheTools is
// on. Nothing when there are none.
func (cfg *config) appendTools(b []byte, c *pipeline.ModelCall, outTool string) ([]byte, error) {
	if len(c.Tools) == 0 && outTool == "" {
		return b, nil
	}
	var err error
	b = append(b, `,"tools":[`...)
	if outTool != "" {
		spec := pipeline.ToolSpec{Name: outTool, Description: outputDescription(&c.Output), Parameters: c.Output.Schema, Strict: c.Output.Strict}
		if b, err = appendTool(b, spec, len(c.Tools) == 0 && cfg.cache[CacheTools], cfg); err != nil {
			return b, err
		}
	}
	for i, t := range c.Tools {
		if i > 0 || outTool != "" {
			b = append(b, ',')
		}
		if b, err = appendTool(b, t, i == len(c.Tools)-1 && cfg.cache[CacheTools], cfg); err != nil {
			return b, err
		}
	}
	b = append(b, ']')
	if outTool != "" {
		return appendOutputToolChoice(b, outTool, len(c.Tools) > 0, &c.Settings), nil
	}
	return appendToolChoice(b, &c.Settings), nil
}

// estimate returns a guess of the bytes the items take in a request.
func estimate(items state.Items) int {
	n := 0
	for _, it := range items.All() {
		n += it.RawLen()
	}
	return n
}

func (cfg *config) appendCacheControl(b []byte) []byte {
	if cfg.ttl != "" {
		b = append(b, `,"cache_control":{"type":"ephemeral","ttl":`...)
		b = jsonw.AppendString(b, cfg.ttl)
		return append(b, '}')
	}
	return append(b, `,"cache_control":{"type":"ephemeral"}`...)
}

// appendTool appends a tool definition: a function tool as a custom tool
// of the Messages API, or a hosted tool's declaration as given (an
// Anthropic server tool such as {"type":"web_search_20250305",…}).
func appendTool(b []byte, t pipeline.ToolSpec, cache bool, cfg *config) ([]byte, error) {
	switch {
	case len(t.Custom) > 0:
		return b, fmt.Errorf("%w: custom tool %q: the Messages API has no freeform tools", ErrUnsupportedTool, t.Name)
	case len(t.Hosted) > 0:
		h := bytes.TrimSpace(t.Hosted)
		if !jsonscan.Valid(h) || len(h) < 2 || h[0] != '{' {
			return b, fmt.Errorf("anthropic: hosted tool %q: declaration is not a JSON object", t.Name)
		}
		if !cache {
			return append(b, h...), nil
		}
		b = append(b, h[:len(h)-1]...)
		return append(cfg.appendCacheControl(b), '}'), nil
	}
	if len(t.Parameters) > 0 && !jsonscan.Valid(t.Parameters) {
		return b, fmt.Errorf("anthropic: tool %q: parameters are not valid JSON", t.Name)
	}
	b = append(b, `{"name":`...)
	b = jsonw.AppendString(b, t.Name)
	if t.Description != "" {
		b = append(b, `,"description":`...)
		b = jsonw.AppendString(b, t.Description)
	}
	b = append(b, `,"input_schema":`...)
	if len(t.Parameters) == 0 || string(t.Parameters) == "null" {
		b = append(b, emptySchema...)
	} else {
		b = append(b, t.Parameters...)
	}
	if t.Strict {
		b = append(b, `,"strict":true`...)
	}
	if cache {
		b = cfg.appendCacheControl(b)
	}
	return append(b, '}'), nil
}

// outputToolName returns the name of the tool that carries c's structured
// output ([WithOutputTool]), or "" when the call asks for none or uses
// native structured output.
func (cfg *config) outputToolName(c *pipeline.ModelCall) (string, error) {
	if !cfg.outputTool || c.Output.Schema == nil {
		return "", nil
	}
	name := c.Output.Name
	if name == "" {
		name = "output"
	}
	if cfg.thinking > 0 {
		return "", fmt.Errorf("anthropic: output %q: an output tool cannot be forced with thinking on (WithOutputTool and WithThinking)", name)
	}
	if !jsonscan.Valid(c.Output.Schema) {
		return "", fmt.Errorf("anthropic: output %q: schema is not valid JSON", name)
	}
	for _, t := range c.Tools {
		if t.Name == name {
			return "", fmt.Errorf("anthropic: output %q: the agent has a tool of that name", name)
		}
	}
	return name, nil
}

// outputDescription is the output tool's description.
func outputDescription(o *pipeline.OutputSpec) string {
	if o.Description != "" {
		return o.Description
	}
	return "Give the final answer, as this tool's input."
}

// appendOutputToolChoice forces the output tool, or any tool when the
// agent has tools of its own.
func appendOutputToolChoice(b []byte, name string, others bool, s *pipeline.ModelSettings) []byte {
	if others {
		b = append(b, `,"tool_choice":{"type":"any"`...)
	} else {
		b = append(b, `,"tool_choice":{"type":"tool","name":`...)
		b = jsonw.AppendString(b, name)
	}
	if s.ParallelToolCalls != nil && !*s.ParallelToolCalls {
		b = append(b, `,"disable_parallel_tool_use":true`...)
	}
	return append(b, '}')
}

// appendToolChoice maps the agent's tool choice: "required" is "any", a
// tool name forces that tool; ParallelToolCalls false sets
// disable_parallel_tool_use.
func appendToolChoice(b []byte, s *pipeline.ModelSettings) []byte {
	noParallel := s.ParallelToolCalls != nil && !*s.ParallelToolCalls
	switch s.ToolChoice {
	case "", "auto":
		if !noParallel {
			return b
		}
		b = append(b, `,"tool_choice":{"type":"auto"`...)
	case "none":
		return append(b, `,"tool_choice":{"type":"none"}`...)
	case "required":
		b = append(b, `,"tool_choice":{"type":"any"`...)
	default:
		b = append(b, `,"tool_choice":{"type":"tool","name":`...)
		b = jsonw.AppendString(b, s.ToolChoice)
	}
	if noParallel {
		b = append(b, `,"disable_parallel_tool_use":true`...)
	}
	return append(b, '}')
}

// messages writes the input items as Messages API messages: consecutive
// items of one side join one message (the model's text, thinking and
// tool_use blocks in an assistant message; tool_result blocks first, then
// the user's content, in a user message). Its methods take the body and
// return it grown, by value, rather than keep it in the writer: the
// writer lives in its caller's frame, but a method writing a slice or a
// string through its pointer does not know that, and pays a write
// barrier for each append while the GC runs.
type messages struct {
	role      role // the open message's role, roleNone before the first
	lastBlock int  // index in b of the closing brace of the last block that may carry cache_control; -1 if none
}

// role is a message's role.
type role uint8

const (
	roleNone role = iota
	roleUser
	roleAssistant
)

// block appends what comes before a block of role r: a comma in the open
// message of that role, or a new message.
func (w *messages) block(b []byte, r role) []byte {
	switch {
	case w.role == r:
		return append(b, ',')
	case w.role != roleNone:
		b = append(b, "]},"...)
	}
	w.role = r
	if r == roleUser {
		return append(b, `{"role":"user","content":[`...)
	}
	return append(b, `{"role":"assistant","content":[`...)
}

// appendMessages appends the items as the messages array.
func (cfg *config) appendMessages(dst []byte, items state.Items) ([]byte, error) {
	w := messages{lastBlock: -1}
	b := append(dst, '[')
	var err error
	for i, it := range items.All() {
		if b, err = w.add(b, i, it); err != nil {
			return dst, err
		}
	}
	if w.role != roleNone {
		b = append(b, "]}"...)
	}
	if cfg.cache[CacheHistory] && w.lastBlock >= 0 {
		tail := append([]byte(nil), b[w.lastBlock:]...)
		b = append(cfg.appendCacheControl(b[:w.lastBlock]), tail...)
	}
	return append(b, ']'), nil
}

// add appends input item i, it, as the content blocks the API takes for
// it, or fails with an *InputError naming it.
func (w *messages) add(b []byte, i int, it state.Item) ([]byte, error) {
	switch it.Kind() {
	case state.KindUserMessage:
		return w.user(b, i, it)
	case state.KindSystemMessage:
		// Sent in the system prompt (see build).
	case state.KindAssistantMessage:
		if it.Text() == "" {
			break // the API refuses empty text blocks
		}
		b = appendText(w.block(b, roleAssistant), it.Text())
		w.lastBlock = len(b) - 1
	case state.KindReasoning:
		if blk := anthropicBlock(it); blk != nil {
			b = append(w.block(b, roleAssistant), blk...)
			w.lastBlock = -1 // thinking blocks take no cache_control
		}
		// Another provider's reasoning is not sent (it stays in the
		// session): see the package documentation.
	case state.KindToolCall, state.KindHandoffCall:
		b = w.toolUse(b, it)
	case state.KindToolOutput, state.KindHandoffOutput:
		return w.toolResult(b, i, it)
	case state.KindOpaque:
		return w.opaque(b, i, it)
	default:
		return b, &InputError{Index: i, Kind: it.Kind(), CallID: it.CallID(), Part: -1,
			Reason: "a " + it.Kind().String() + " (" + it.Name() + ") has no Messages API content block"}
	}
	return b, nil
}

// user appends a user message: its text, or each of its content parts.
func (w *messages) user(b []byte, i int, it state.Item) ([]byte, error) {
	parts := it.Content()
	if parts == nil {
		b = appendText(w.block(b, roleUser), it.Text())
		w.lastBlock = len(b) - 1
		return b, nil
	}
	for j, p := range parts {
		var err error
		if b, err = appendPart(w.block(b, roleUser), p); err != nil {
			return b, &InputError{Index: i, Kind: it.Kind(), Part: j, Reason: err.Error()}
		}
		w.lastBlock = len(b) - 1
	}
	return b, nil
}

// toolUse appends a function or handoff call as an assistant's tool_use
// block.
func (w *messages) toolUse(b []byte, it state.Item) []byte {
	b = append(w.block(b, roleAssistant), `{"type":"tool_use","id":`...)
	b = jsonw.AppendString(b, it.CallID())
	b = append(b, `,"name":`...)
	b = jsonw.AppendString(b, it.Name())
	b = append(b, `,"input":`...)
	b = appendArguments(b, it.Text())
	b = append(b, '}')
	w.lastBlock = len(b) - 1
	return b
}

// toolResult appends a call's output as a user's tool_result block: its
// text, or its content parts.
func (w *messages) toolResult(b []byte, i int, it state.Item) ([]byte, error) {
	b = append(w.block(b, roleUser), `{"type":"tool_result","tool_use_id":`...)
	b = jsonw.AppendString(b, it.CallID())
	b = append(b, `,"content":`...)
	if parts := it.Content(); parts != nil {
		b = append(b, '[')
		for j, p := range parts {
			if j > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendPart(b, p); err != nil {
				return b, &InputError{Index: i, Kind: it.Kind(), CallID: it.CallID(), Part: j, Reason: err.Error()}
			}
		}
		b = append(b, ']')
	} else {
		b = jsonw.AppendString(b, it.Text())
	}
	b = append(b, '}')
	w.lastBlock = len(b) - 1
	return b, nil
}

// opaque appends an opaque item the Messages API returned, verbatim as
// an assistant's block. Another provider's own item is left out (it stays
// in the session); any other opaque item fails.
func (w *messages) opaque(b []byte, i int, it state.Item) ([]byte, error) {
	blk := anthropicBlock(it)
	if blk == nil && otherProvider(it) {
		return b, nil
	}
	if blk == nil {
		return b, &InputError{Index: i, Kind: it.Kind(), Part: -1,
			Reason: "an opaque item of type " + it.Name() + " that did not come from the Messages API"}
	}
	b = append(w.block(b, roleAssistant), blk...)
	w.lastBlock = -1
	return b, nil
}

func appendText(b []byte, text string) []byte {
	b = append(b, `{"type":"text","text":`...)
	b = jsonw.AppendString(b, text)
	return append(b, '}')
}

// appendArguments appends a call's arguments as the tool_use input: the
// JSON object the model produced, or {} for arguments that are not one (a
// malformed call, answered with an error, which the API would refuse).
func appendArguments(b []byte, args string) []byte {
	a := strings.TrimSpace(args)
	if len(a) < 2 || a[0] != '{' || !jsonscan.Valid([]byte(a)) {
		return append(b, "{}"...)
	}
	return append(b, a...)
}

// imageTypes are the image media types the Messages API reads.
var imageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// appendPart appends a content part as a Messages API block: text, an
// image (base64 from a data URL, or by URL), a document (a PDF or plain
// text inline, a PDF by URL). Anything else is an error saying why.
func appendPart(b []byte, p state.ContentPart) ([]byte, error) {
	switch p.Type() {
	case "input_text":
		return appendText(b, p.Text()), nil
	case "input_image":
		url := p.URL()
		if url == "" {
			return b, fmt.Errorf("an image by file ID (%s): the Messages API does not read another API's files", p.FileID())
		}
		if media, data, ok := parseDataURL(url); ok {
			if !imageTypes[media] {
				return b, fmt.Errorf("an image of type %q: the Messages API reads JPEG, PNG, GIF and WebP", media)
			}
			b = append(b, `{"type":"image","source":{"type":"base64","media_type":`...)
			b = jsonw.AppendString(b, media)
			b = append(b, `,"data":`...)
			b = jsonw.AppendString(b, data)
			return append(b, "}}"...), nil
		}
		if !strings.HasPrefix(url, "https://") && !strings.HasPrefix(url, "http://") {
			return b, fmt.Errorf("an image URL that is neither a data URL nor http(s)")
		}
		b = append(b, `{"type":"image","source":{"type":"url","url":`...)
		b = jsonw.AppendString(b, url)
		return append(b, "}}"...), nil
	case "input_file":
		name, dataURL := p.FileData()
		switch {
		case dataURL != "":
			media, data, ok := parseDataURL(dataURL)
			if !ok {
				return b, fmt.Errorf("a file whose data is not a base64 data URL")
			}
			switch media {
			case "application/pdf":
				b = append(b, `{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":`...)
				b = jsonw.AppendString(b, data)
				b = append(b, '}')
			case "text/plain":
				text, err := base64.StdEncoding.DecodeString(data)
				if err != nil {
					return b, fmt.Errorf("a text file whose data is not base64: %v", err)
				}
				b = append(b, `{"type":"document","source":{"type":"text","media_type":"text/plain","data":`...)
				b = jsonw.AppendString(b, string(text))
				b = append(b, '}')
			default:
				return b, fmt.Errorf("a file of type %q: the Messages API reads PDF and plain text documents", media)
			}
			if name != "" {
				b = append(b, `,"title":`...)
				b = jsonw.AppendString(b, name)
			}
			return append(b, '}'), nil
		case p.URL() != "":
			b = append(b, `{"type":"document","source":{"type":"url","url":`...)
			b = jsonw.AppendString(b, p.URL())
			return append(b, "}}"...), nil
		}
		return b, fmt.Errorf("a file by file ID (%s): the Messages API does not read another API's files", p.FileID())
	}
	return b, fmt.Errorf("a content part of type %q", p.Type())
}

// parseDataURL splits "data:<media>;base64,<data>".
func parseDataURL(url string) (media, data string, ok bool) {
	rest, ok := strings.CutPrefix(url, "data:")
	if !ok {
		return "", "", false
	}
	head, data, ok := strings.Cut(rest, ",")
	if !ok {
		return "", "", false
	}
	media, ok = strings.CutSuffix(head, ";base64")
	return media, data, ok
}
