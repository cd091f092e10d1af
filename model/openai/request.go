package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/turnkit/turnkit/internal/jsonscan"
	"github.com/turnkit/turnkit/internal/jsonw"
	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// emptyParameters is the schema of a tool that takes no arguments, valid in
// strict mode.
const emptyParameters = `{"type":"object","properties":{},"required":[],"additionalProperties":false}`

// modelName returns the model a call uses.
func (cfg *config) modelName(c *pipeline.ModelCall) (string, error) {
	if c.Settings.Model != "" {
		return c.Settings.Model, nil
	}
	if cfg.model != "" {
		return cfg.model, nil
	}
	agent := ""
	if c.Agent != nil {
		agent = c.Agent.Name
	}
	return "", fmt.Errorf("openai: agent %q has no model name: set Agent.Settings.Model or use WithModel", agent)
}

// params builds the request with in as its input (c's input, or the part
// of it a chained call sends). The input items are passed as their
// canonical JSON, concatenated once into one array and never re-encoded.
func (m *Model) params(c *pipeline.ModelCall, in state.Items) (responses.ResponseNewParams, error) {
	var p responses.ResponseNewParams
	name, err := m.cfg.modelName(c)
	if err != nil {
		return p, err
	}
	p.Model = name
	if c.Instructions != "" {
		p.Instructions = param.NewOpt(c.Instructions)
	}
	p.Input = param.Override[responses.ResponseNewParamsInputUnion](json.RawMessage(appendInput(nil, in)))
	if p.Tools, err = toolParams(c.Tools); err != nil {
		return p, err
	}
	if o := &c.Output; o.Schema != nil {
		if err := checkOutput(o); err != nil {
			return p, err
		}
		p.Text = param.Override[responses.ResponseTextConfigParam](json.RawMessage(appendTextFormat(nil, o)))
	}
	for _, inc := range m.cfg.include {
		p.Include = append(p.Include, responses.ResponseIncludable(inc))
	}
	m.setSettings(&p, &c.Settings)
	return p, nil
}

// toolParams declares the tools: a hosted tool as given, a custom tool
// with its format, a function tool with its schema. It returns nil for no
// tools.
func toolParams(tools []pipeline.ToolSpec) ([]responses.ToolUnionParam, error) {
	if len(tools) == 0 {
		return nil, nil
	}
	out := make([]responses.ToolUnionParam, len(tools))
	buf := make([]byte, 0, toolsSize(tools)) // the tools' JSON, one after the other
	for i, t := range tools {
		start := len(buf)
		switch {
		case len(t.Hosted) > 0:
			if !jsonscan.Valid(t.Hosted) {
				return nil, fmt.Errorf("openai: hosted tool %q: declaration is not valid JSON", t.Name)
			}
			param.SetJSON(t.Hosted, &out[i])
		case len(t.Custom) > 0:
			if !jsonscan.Valid(t.Custom) {
				return nil, fmt.Errorf("openai: custom tool %q: format is not valid JSON", t.Name)
			}
			buf = appendCustomTool(buf, t)
			param.SetJSON(buf[start:len(buf):len(buf)], &out[i])
		default:
			if len(t.Parameters) > 0 && !jsonscan.Valid(t.Parameters) {
				return nil, fmt.Errorf("openai: tool %q: parameters are not valid JSON", t.Name)
			}
			buf = appendTool(buf, t)
			param.SetJSON(buf[start:len(buf):len(buf)], &out[i])
		}
	}
	return out, nil
}

// setSettings sets the agent's settings s and the model's own on p.
func (m *Model) setSettings(p *responses.ResponseNewParams, s *pipeline.ModelSettings) {
	if s.Temperature != nil {
		p.Temperature = param.NewOpt(*s.Temperature)
	}
	if s.TopP != nil {
		p.TopP = param.NewOpt(*s.TopP)
	}
	if s.MaxOutputTokens != nil {
		p.MaxOutputTokens = param.NewOpt(*s.MaxOutputTokens)
	}
	switch s.ToolChoice {
	case "":
	case "auto", "required", "none":
		p.ToolChoice.OfToolChoiceMode = param.NewOpt(responses.ToolChoiceOptions(s.ToolChoice))
	default:
		p.ToolChoice.OfFunctionTool = &responses.ToolChoiceFunctionParam{Name: s.ToolChoice}
	}
	if s.ParallelToolCalls != nil {
		p.ParallelToolCalls = param.NewOpt(*s.ParallelToolCalls)
	}
	if s.ReasoningEffort != "" || m.cfg.summary != "" {
		p.Reasoning = shared.ReasoningParam{
			Effort:  shared.ReasoningEffort(s.ReasoningEffort),
			Summary: shared.ReasoningSummary(m.cfg.summary),
		}
	}
	if m.cfg.truncation != "" {
		p.Truncation = responses.ResponseNewParamsTruncation(m.cfg.truncation)
	}
	if m.cfg.store != nil {
		p.Store = param.NewOpt(*m.cfg.store)
	}
	if len(s.Metadata) > 0 {
		p.Metadata = shared.Metadata(s.Metadata)
	}
}

// appendInput appends the items' canonical JSON to dst as one JSON array,
// without the items another provider made for itself (see
// [otherProvider]).
func appendInput(dst []byte, items state.Items) []byte {
	n := 2
	for _, it := range items.All() {
		n += it.RawLen() + 1
	}
	dst = slices.Grow(dst, n)
	dst = append(dst, '[')
	first := true
	for _, it := range items.All() {
		mark := len(dst)
		if !first {
			dst = append(dst, ',')
		}
		start := len(dst)
		dst = it.AppendRaw(dst)
		if otherProvider(it, dst[start:]) {
			dst = dst[:mark]
			continue
		}
		first = false
	}
	return append(dst, ']')
}

// providerMarkers are the members with which the other adapters keep a
// provider's own block in an item's JSON: model/anthropic a Messages API
// content block, model/gemini a Gemini part.
var providerMarkers = [][]byte{[]byte(`"anthropic":{`), []byte(`"gemini":{`)}

// otherProvider reports whether an item (raw is its JSON) is one another
// provider's adapter made for that provider only: a reasoning item or an
// opaque item carrying an Anthropic content block (a thinking block, a
// server tool's block) or a Gemini part (a thought, executable code). Such items are not sent to OpenAI, whose API
// could not read them; they stay in the session, and the other adapter
// sends them again when the run goes back to it. This is the rule for a
// run that hands off between providers.
func otherProvider(it state.Item, raw []byte) bool {
	if k := it.Kind(); k != state.KindReasoning && k != state.KindOpaque {
		return false
	}
	for _, m := range providerMarkers {
		if bytes.Contains(raw, m) {
			return true
		}
	}
	return false
}

// appendTool appends a Responses API function tool for t: its schema as
// given, strict when t asks for it.
func appendTool(dst []byte, t pipeline.ToolSpec) []byte {
	dst = append(dst, `{"type":"function","name":`...)
	dst = jsonw.AppendString(dst, t.Name)
	if t.Description != "" {
		dst = append(dst, `,"description":`...)
		dst = jsonw.AppendString(dst, t.Description)
	}
	dst = append(dst, `,"parameters":`...)
	dst = appendParameters(dst, t.Parameters)
	if t.Strict {
		dst = append(dst, `,"strict":true}`...)
	} else {
		dst = append(dst, `,"strict":false}`...)
	}
	return dst
}

// toolsSize is room for the declarations of tools: their names,
// descriptions, schemas and formats, and the members around them.
func toolsSize(tools []pipeline.ToolSpec) int {
	n := 0
	for _, t := range tools {
		n += 128 + len(t.Name) + len(t.Description) + len(t.Parameters) + len(t.Custom)
	}
	return n
}

func appendParameters(dst []byte, schema json.RawMessage) []byte {
	if len(schema) == 0 || string(schema) == "null" {
		return append(dst, emptyParameters...)
	}
	return append(dst, schema...)
}

// appendCustomTool appends a Responses API custom tool for t: freeform
// text input in the format t.Custom gives.
func appendCustomTool(dst []byte, t pipeline.ToolSpec) []byte {
	dst = append(dst, `{"type":"custom","name":`...)
	dst = jsonw.AppendString(dst, t.Name)
	if t.Description != "" {
		dst = append(dst, `,"description":`...)
		dst = jsonw.AppendString(dst, t.Description)
	}
	dst = append(dst, `,"format":`...)
	dst = append(dst, t.Custom...)
	return append(dst, '}')
}
