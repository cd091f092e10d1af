package gemini

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"mime"
	"path"
	"strings"
	"sync"

	"google.golang.org/genai"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// request is one generateContent call: the model, the contents and the
// config, new for the call. The contents come from a pooled builder,
// which release returns once the client is done with them.
type request struct {
	model    string
	contents []*genai.Content
	config   *genai.GenerateContentConfig
	b        *contentBuilder
}

// release hands the request's builder back to the pool. The client has
// no use for the contents after its call returns: it copies them into
// maps of its own (through encoding/json) before sending them.
func (r *request) release() { r.b.release() }

// buildRequest converts the model call. Every refusal happens here,
// before the request: an item the API cannot take, a tool it cannot
// declare, a setting it has no equivalent for.
func (m *Model) buildRequest(c *pipeline.ModelCall) (*request, error) {
	name := c.Settings.Model
	if name == "" {
		name = m.cfg.model
	}
	if name == "" {
		return nil, errors.New("gemini: no model name: set pipeline.ModelSettings.Model or gemini.WithModel")
	}
	b := builders.Get().(*contentBuilder)
	cfg, err := m.newConfig(b, c)
	if err != nil {
		b.release()
		return nil, err
	}
	return &request{model: name, contents: b.contents, config: cfg, b: b}, nil
}

// newConfig fills b with the call's contents and returns its config.
func (m *Model) newConfig(b *contentBuilder, c *pipeline.ModelCall) (*genai.GenerateContentConfig, error) {
	b.grow(c.Input)
	if c.Instructions != "" {
		p := b.part()
		p.Text = c.Instructions
		b.system = append(b.system, p)
	}
	if err := b.addItems(c.Input); err != nil {
		return nil, err
	}
	cfg := &genai.GenerateContentConfig{}
	if len(b.system) > 0 {
		cfg.SystemInstruction = &genai.Content{Role: genai.RoleUser, Parts: b.system}
	}
	if err := m.setTools(cfg, c); err != nil {
		return nil, err
	}
	if err := m.setSettings(cfg, &c.Settings, len(c.Tools) > 0); err != nil {
		return nil, err
	}
	if o := &c.Output; o.Schema != nil {
		if !json.Valid(o.Schema) {
			return nil, fmt.Errorf("gemini: output %q: schema is not valid JSON", o.Name)
		}
		cfg.ResponseMIMEType = "application/json"
		cfg.ResponseJsonSchema = json.RawMessage(o.Schema)
	}
	if len(m.cfg.safety) > 0 {
		cfg.SafetySettings = m.cfg.safety[:len(m.cfg.safety):len(m.cfg.safety)]
	}
	if m.cfg.http != nil {
		h := *m.cfg.http
		h.Headers = h.Headers.Clone() // the client adds to it
		cfg.HTTPOptions = &h
	}
	for _, edit := range m.cfg.edit {
		edit(cfg)
	}
	return cfg, nil
}

// setTools declares the function tools (handoffs included) in one Tool,
// and each hosted tool as the Tool object its declaration is.
func (m *Model) setTools(cfg *genai.GenerateContentConfig, c *pipeline.ModelCall) error {
	var funcs *genai.Tool
	for _, t := range c.Tools {
		switch {
		case len(t.Custom) > 0:
			return fmt.Errorf("%w: custom tool %q: the Gemini API has no freeform tools", ErrUnsupportedTool, t.Name)
		case len(t.Hosted) > 0:
			hosted, err := hostedTool(t.Hosted)
			if err != nil {
				return fmt.Errorf("%w: hosted tool %q: %w", ErrUnsupportedTool, t.Name, err)
			}
			cfg.Tools = append(cfg.Tools, hosted)
		default:
			if len(t.Parameters) > 0 && !json.Valid(t.Parameters) {
				return fmt.Errorf("gemini: tool %q: parameters are not valid JSON", t.Name)
			}
			if funcs == nil {
				funcs = &genai.Tool{FunctionDeclarations: make([]*genai.FunctionDeclaration, 0, len(c.Tools))}
				cfg.Tools = append(cfg.Tools, funcs)
			}
			fd := &genai.FunctionDeclaration{Name: t.Name, Description: t.Description}
			if len(t.Parameters) > 0 {
				fd.ParametersJsonSchema = json.RawMessage(t.Parameters)
			}
			funcs.FunctionDeclarations = append(funcs.FunctionDeclarations, fd)
		}
	}
	return nil
}

// hostedTool reads a hosted tool's declaration as a Gemini Tool object,
// such as {"googleSearch":{}} or {"codeExecution":{}}; a declaration of
// another API (say {"type":"web_search"}) is an error.
func hostedTool(raw json.RawMessage) (*genai.Tool, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var t genai.Tool
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("not a Gemini Tool object: %w", err)
	}
	if len(t.FunctionDeclarations) > 0 {
		return nil, errors.New("function declarations are tools of their own, not hosted tools")
	}
	if b, _ := json.Marshal(&t); string(b) == "{}" {
		return nil, errors.New("an empty Gemini Tool object")
	}
	return &t, nil
}

// setSettings maps the agent's model settings. Those the Gemini API has no
// place for and that change nothing the model sees (parallel tool calls,
// metadata) are not sent.
func (m *Model) setSettings(cfg *genai.GenerateContentConfig, s *pipeline.ModelSettings, tools bool) error {
	if s.Temperature != nil {
		t := float32(*s.Temperature)
		cfg.Temperature = &t
	}
	if s.TopP != nil {
		p := float32(*s.TopP)
		cfg.TopP = &p
	}
	if s.MaxOutputTokens != nil {
		cfg.MaxOutputTokens = int32(min(max(*s.MaxOutputTokens, 0), math.MaxInt32))
	}
	switch s.ToolChoice {
	case "":
	case "auto":
		cfg.ToolConfig = &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeAuto}}
	case "required":
		cfg.ToolConfig = &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeAny}}
	case "none":
		cfg.ToolConfig = &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeNone}}
	default:
		if !tools {
			return fmt.Errorf("%w: tool choice %q names a tool, and the call offers none", ErrUnsupportedSetting, s.ToolChoice)
		}
		cfg.ToolConfig = &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{
			Mode: genai.FunctionCallingConfigModeAny, AllowedFunctionNames: []string{s.ToolChoice},
		}}
	}
	switch {
	case m.cfg.thinking != nil:
		cfg.ThinkingConfig = m.cfg.thinking
	case s.ReasoningEffort == "":
	case s.ReasoningEffort == "none":
		zero := int32(0)
		cfg.ThinkingConfig = &genai.ThinkingConfig{ThinkingBudget: &zero}
	default:
		level, ok := thinkingLevels[s.ReasoningEffort]
		if !ok {
			return fmt.Errorf("%w: reasoning effort %q (Gemini thinking levels: minimal, low, medium, high; or none)", ErrUnsupportedSetting, s.ReasoningEffort)
		}
		cfg.ThinkingConfig = &genai.ThinkingConfig{ThinkingLevel: level}
	}
	return nil
}

var thinkingLevels = map[string]genai.ThinkingLevel{
	"minimal": genai.ThinkingLevelMinimal,
	"low":     genai.ThinkingLevelLow,
	"medium":  genai.ThinkingLevelMedium,
	"high":    genai.ThinkingLevelHigh,
}

// A contentBuilder turns items into contents: consecutive items of one
// role share a Content, so the outputs of parallel calls answer them in
// one turn, as the API wants. Parts, part pointers and contents are cut
// from slabs sized once per call, rather than allocated one by one.
type contentBuilder struct {
	contents []*genai.Content
	system   []*genai.Part
	// sig is a thought signature waiting for the model part it belongs
	// to: the one the next item makes.
	sig []byte
	// names maps the call IDs seen to their function names, for outputs
	// that do not carry it; it is made when the first such output comes.
	names map[string]string
	items state.Items

	partSlab    []genai.Part
	contentSlab []genai.Content
	callSlab    []genai.FunctionCall
	respSlab    []genai.FunctionResponse
	// outputs holds the function responses' output texts, which their
	// maps point to: a pointer goes into an interface without an
	// allocation, and encoding/json writes it as the string.
	outputs []string
	// ptrs backs every content's Parts, in order; the last content's
	// parts start at last.
	ptrs []*genai.Part
	last int
	args argsDecoder
	// maps are the maps made for arguments and responses, the first used
	// of them in use.
	maps []map[string]any
	used int
}

// builders keeps content builders between calls, with their slabs and
// maps: those of histories of up to maxPooled items whose arguments take
// up to maxPooledText bytes, and the maps of up to maxPooledKeys members.
var builders = sync.Pool{New: func() any { return new(contentBuilder) }}

const (
	maxPooled     = 4096
	maxPooledText = 1 << 20
	maxPooledKeys = 64
)

// grow sizes the slabs for items (and the instructions), reusing those
// that are large enough.
func (b *contentBuilder) grow(items state.Items) {
	n := items.Len() + 2
	b.partSlab = reuse(b.partSlab, n)
	b.contentSlab = reuse(b.contentSlab, n)
	b.ptrs = reuse(b.ptrs, n)
	b.contents = reuse(b.contents, n)
	calls, outputs, size := 0, 0, 0
	for _, it := range items.All() {
		switch it.Kind() {
		case state.KindToolCall, state.KindHandoffCall:
			calls, size = calls+1, size+len(it.Text())
		case state.KindToolOutput, state.KindHandoffOutput:
			outputs++
		}
	}
	b.items = items
	b.callSlab = reuse(b.callSlab, calls)
	b.args.grow(calls, size)
	b.respSlab = reuse(b.respSlab, outputs)
	b.outputs = reuse(b.outputs, outputs)
}

// reuse returns s emptied if it has room for n elements, or a new slice
// that has.
func reuse[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:0]
	}
	return make([]T, 0, n)
}

// newMap returns an empty map, a spare one while there are.
func (b *contentBuilder) newMap() map[string]any {
	if b.used == len(b.maps) {
		b.maps = append(b.maps, make(map[string]any, 1))
	}
	b.used++
	return b.maps[b.used-1]
}

// release clears what the call put in b (so that the pool holds no
// reference to its items) and puts b back in the pool, unless its slabs
// are larger than a pooled builder's may be.
func (b *contentBuilder) release() {
	if cap(b.partSlab) > maxPooled+2 || cap(b.args.text) > maxPooledText {
		return
	}
	clear(b.partSlab)
	clear(b.contentSlab)
	clear(b.ptrs)
	clear(b.contents)
	clear(b.system)
	clear(b.callSlab)
	clear(b.respSlab)
	clear(b.outputs)
	b.maps = keepMaps(b.maps, b.used)
	b.args.reset()
	*b = contentBuilder{
		partSlab: b.partSlab[:0], contentSlab: b.contentSlab[:0], ptrs: b.ptrs[:0], contents: b.contents[:0],
		system: b.system[:0], callSlab: b.callSlab[:0], respSlab: b.respSlab[:0], outputs: b.outputs[:0],
		args: b.args, maps: b.maps,
	}
	builders.Put(b)
}

// keepMaps empties the first used maps and returns the maps to keep: all
// but those that grew past maxPooledKeys members.
func keepMaps(maps []map[string]any, used int) []map[string]any {
	keep := maps[:0]
	for i, m := range maps {
		if i < used && len(m) > maxPooledKeys {
			continue
		}
		clear(m)
		keep = append(keep, m)
	}
	clear(maps[len(keep):])
	return keep
}

// part returns a new zero part, from the slab while it lasts.
func (b *contentBuilder) part() *genai.Part {
	if len(b.partSlab) < cap(b.partSlab) {
		b.partSlab = b.partSlab[:len(b.partSlab)+1]
		return &b.partSlab[len(b.partSlab)-1]
	}
	return new(genai.Part)
}

// add appends p, made by b.part, to the contents as a part of role.
func (b *contentBuilder) add(role string, p *genai.Part) {
	if role == genai.RoleModel && b.sig != nil {
		if p.ThoughtSignature == nil {
			p.ThoughtSignature = b.sig
		}
		b.sig = nil
	}
	if role != genai.RoleModel {
		b.flushSignature()
	}
	b.ptrs = append(b.ptrs, p)
	if n := len(b.contents); n > 0 && b.contents[n-1].Role == role {
		b.contents[n-1].Parts = b.ptrs[b.last:len(b.ptrs):len(b.ptrs)]
		return
	}
	b.last = len(b.ptrs) - 1
	var c *genai.Content
	if len(b.contentSlab) < cap(b.contentSlab) {
		b.contentSlab = b.contentSlab[:len(b.contentSlab)+1]
		c = &b.contentSlab[len(b.contentSlab)-1]
	} else {
		c = new(genai.Content)
	}
	c.Role, c.Parts = role, b.ptrs[b.last:len(b.ptrs):len(b.ptrs)]
	b.contents = append(b.contents, c)
}

// flushSignature sends a signature that no model part followed as a part
// of its own, as the API sends one at the end of a stream.
func (b *contentBuilder) flushSignature() {
	if b.sig == nil {
		return
	}
	sig := b.sig
	b.sig = nil
	p := b.part()
	p.ThoughtSignature = sig
	b.add(genai.RoleModel, p)
}

// addItems converts the items in order. An item the API cannot take is an
// *InputError naming it.
func (b *contentBuilder) addItems(items state.Items) error {
	for i, it := range items.All() {
		if err := b.addItem(i, it); err != nil {
			return err
		}
	}
	b.flushSignature()
	return nil
}

// addItem converts input item i, it, or fails with an *InputError naming
// it.
func (b *contentBuilder) addItem(i int, it state.Item) error {
	var err *InputError
	switch it.Kind() {
	case state.KindUserMessage:
		err = b.addUser(it)
	case state.KindSystemMessage:
		// The API takes system text only as the system instruction: a
		// system item joins it, after the agent's instructions.
		b.system = append(b.system, &genai.Part{Text: it.Text()})
	case state.KindAssistantMessage:
		if it.Text() != "" {
			p := b.part()
			p.Text = it.Text()
			b.add(genai.RoleModel, p)
		}
	case state.KindReasoning:
		b.addReasoning(it)
	case state.KindToolCall, state.KindHandoffCall:
		err = b.addCall(it)
	case state.KindToolOutput, state.KindHandoffOutput:
		err = b.addOutput(i, it)
	case state.KindOpaque:
		if p, ok := geminiPart(it); ok {
			b.add(genai.RoleModel, p)
		} else if !otherProvider(it) { // another provider's own item: kept in the run, not sent (see the package doc)
			err = &InputError{Part: -1, Reason: "an opaque item of type " + it.Name() + " from another API has no Gemini part"}
		}
	default:
		err = &InputError{Part: -1, Reason: "a " + it.Kind().String() + " (" + it.Name() + ") has no Gemini part"}
	}
	if err != nil {
		err.Index, err.Kind, err.CallID = i, it.Kind(), it.CallID()
		return err
	}
	return nil
}

// addUser converts a user message: its text, or each of its content
// parts. A part the API cannot take is refused, naming the part.
func (b *contentBuilder) addUser(it state.Item) *InputError {
	parts := it.Content()
	if parts == nil {
		p := b.part()
		p.Text = it.Text()
		b.add(genai.RoleUser, p)
		return nil
	}
	for j, p := range parts {
		gp, err := userPart(p)
		if err != nil {
			return &InputError{Part: j, Reason: err.Error()}
		}
		b.add(genai.RoleUser, gp)
	}
	return nil
}

// addReasoning converts a reasoning item of this API's: a thought as a
// thought part, a bare signature held for the part it goes with. Another
// API's reasoning is kept in the run, not sent (see the package doc).
func (b *contentBuilder) addReasoning(it state.Item) {
	r, ok := geminiReasoning(it)
	if !ok {
		return
	}
	if r.Thought {
		p := b.part()
		p.Text, p.Thought, p.ThoughtSignature = it.Text(), true, r.ThoughtSignature
		b.add(genai.RoleModel, p)
		return
	}
	b.flushSignature()
	b.sig = r.ThoughtSignature
}

// addCall converts a function or handoff call, noting its function's
// name for the outputs that answer it.
func (b *contentBuilder) addCall(it state.Item) *InputError {
	args, err := b.args.decode(it.Text(), b.newMap)
	if err != nil {
		return &InputError{Part: -1, Reason: "arguments: " + err.Error()}
	}
	if b.names != nil {
		b.names[it.CallID()] = it.Name()
	}
	b.callSlab = append(b.callSlab, genai.FunctionCall{ID: wireID(it.CallID()), Name: it.Name(), Args: args})
	p := b.part()
	p.FunctionCall = &b.callSlab[len(b.callSlab)-1]
	b.add(genai.RoleModel, p)
	return nil
}

// addOutput converts input item i, a call's output, as a function
// response: its text, or its content parts (text joined into the
// response's output, the others as the response's parts).
func (b *contentBuilder) addOutput(i int, it state.Item) *InputError {
	name := it.Name()
	if name == "" {
		name = b.callName(i, it.CallID())
	}
	if name == "" {
		return &InputError{Part: -1, Reason: "the output names no function and answers no call of the input: the API needs the function's name"}
	}
	b.respSlab = append(b.respSlab, genai.FunctionResponse{ID: wireID(it.CallID()), Name: name})
	fr := &b.respSlab[len(b.respSlab)-1]
	parts := it.Content()
	if parts == nil {
		b.outputs = append(b.outputs, it.Text())
		fr.Response = b.newMap()
		fr.Response["output"] = &b.outputs[len(b.outputs)-1]
	} else {
		var text strings.Builder
		for j, p := range parts {
			if p.Type() == "input_text" {
				text.WriteString(p.Text())
				continue
			}
			fp, err := responsePart(p)
			if err != nil {
				return &InputError{Part: j, Reason: err.Error()}
			}
			fr.Parts = append(fr.Parts, fp)
		}
		fr.Response = map[string]any{"output": text.String()}
	}
	p := b.part()
	p.FunctionResponse = fr
	b.add(genai.RoleUser, p)
	return nil
}

// callName returns the function name of the last call with the ID callID
// among the input items before item i. The first output that needs it
// makes the map, from those items; the calls after it join as they come.
func (b *contentBuilder) callName(i int, callID string) string {
	if b.names == nil {
		b.names = make(map[string]string)
		for j := range i {
			if it := b.items.At(j); it.Kind() == state.KindToolCall || it.Kind() == state.KindHandoffCall {
				b.names[it.CallID()] = it.Name()
			}
		}
	}
	return b.names[callID]
}

// userPart converts a user message's content part.
func userPart(p state.ContentPart) (*genai.Part, error) {
	switch p.Type() {
	case "input_text":
		return &genai.Part{Text: p.Text()}, nil
	case "input_image", "input_file":
		name, data := p.FileData()
		if data == "" && p.URL() != "" && strings.HasPrefix(p.URL(), "data:") {
			data = p.URL()
		}
		switch {
		case data != "":
			mt, bytes, err := decodeDataURL(data)
			if err != nil {
				return nil, err
			}
			return &genai.Part{InlineData: &genai.Blob{MIMEType: mt, Data: bytes, DisplayName: name}}, nil
		case p.URL() != "":
			return &genai.Part{FileData: &genai.FileData{FileURI: p.URL(), MIMEType: mimeOf(p.URL())}}, nil
		}
		return nil, fmt.Errorf("%s by file ID %q: the Gemini API takes files by URI or inline, not by another API's file ID", partName(p), p.FileID())
	}
	return nil, fmt.Errorf("a content part of type %q has no Gemini part", p.Type())
}

// responsePart converts a tool output's image or file part.
func responsePart(p state.ContentPart) (*genai.FunctionResponsePart, error) {
	gp, err := userPart(p)
	if err != nil {
		return nil, err
	}
	switch {
	case gp.InlineData != nil:
		return &genai.FunctionResponsePart{InlineData: &genai.FunctionResponseBlob{
			MIMEType: gp.InlineData.MIMEType, Data: gp.InlineData.Data, DisplayName: gp.InlineData.DisplayName,
		}}, nil
	case gp.FileData != nil:
		return &genai.FunctionResponsePart{FileData: &genai.FunctionResponseFileData{
			FileURI: gp.FileData.FileURI, MIMEType: gp.FileData.MIMEType,
		}}, nil
	}
	return nil, fmt.Errorf("a content part of type %q has no Gemini function response part", p.Type())
}

func partName(p state.ContentPart) string {
	if p.Type() == "input_image" {
		return "an image"
	}
	return "a file"
}

// decodeDataURL splits a base64 data URL into its MIME type and bytes.
func decodeDataURL(u string) (string, []byte, error) {
	meta, data, ok := strings.Cut(strings.TrimPrefix(u, "data:"), ",")
	mt, b64 := strings.CutSuffix(meta, ";base64")
	if !ok || !b64 || mt == "" {
		return "", nil, errors.New("a data URL that is not data:<mime type>;base64,…")
	}
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return "", nil, fmt.Errorf("a data URL whose base64 does not decode: %w", err)
	}
	return mt, b, nil
}

// mimeOf guesses a file's MIME type from its URL's extension; "" lets the
// API decide (it knows the type of the files uploaded to it).
func mimeOf(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	mt, _, _ := mime.ParseMediaType(mime.TypeByExtension(path.Ext(u)))
	return mt
}
