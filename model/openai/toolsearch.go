package openai

import (
	"github.com/turnkit/turnkit/pipeline"
)

// WithHostedToolSearch makes a [Model] search an agent's deferred tools
// (package tool/deferred) with the Responses API's own tool search,
// instead of the client-side search tool: the request then declares the
// hosted tool_search tool and every deferred tool as a function with
// defer_loading, the API loads the definitions the model looks for into
// its context, and the response's tool_search_call and
// tool_search_output items are recorded and replayed like other items.
// The request still carries every deferred tool's definition (the saving
// is in the model's context, not in the request's bytes), and a resumed
// run needs no record of what was loaded: the replayed items say it.
// Only some models take the tool (gpt-5.4 and later, as of this
// writing), so it is off by default. A [ChatModel] given it fails its
// calls with [ErrUnsupportedSetting]: Chat Completions has no such tool.
func WithHostedToolSearch() Option {
	return optionFunc(func(c *config) { c.toolSearch = true })
}

// hostedSearchTool is the Responses API's tool search, run by the API.
const hostedSearchTool = `{"type":"tool_search"}`

// DeferredTools returns the declarations with which the API searches the
// deferred tools specs itself: the hosted tool_search tool, then each
// spec as a function with defer_loading. ok is false, and nothing is
// returned, unless the model was made with [WithHostedToolSearch].
// tool/deferred's middleware calls it.
func (m *Model) DeferredTools(specs []pipeline.ToolSpec) (out []pipeline.ToolSpec, ok bool) {
	if !m.cfg.toolSearch {
		return nil, false
	}
	out = make([]pipeline.ToolSpec, 0, len(specs)+1)
	out = append(out, pipeline.ToolSpec{Name: "tool_search", Hosted: []byte(hostedSearchTool)})
	for _, t := range specs {
		if len(t.Hosted) > 0 || len(t.Custom) > 0 {
			out = append(out, t) // not a function: sent as it is
			continue
		}
		b := appendTool(nil, t)
		b = append(b[:len(b)-1], `,"defer_loading":true}`...)
		d := t
		d.Hosted = b
		out = append(out, d)
	}
	return out, true
}
