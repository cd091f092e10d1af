package deferred

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// SearchToolName is the name of the search tool a [Set] offers.
const SearchToolName = "load_tools"

// loadedKey is the extension key under which a run records the deferred
// tools it loaded, so that a resumed run, in any process, keeps offering
// them.
const loadedKey = "turnkit.deferred"

// A Set is a group of deferred tools: the model is sent their names and
// one-line descriptions, in the description of a search tool, and the full
// definition of a tool (its description and JSON schema) only once it
// loaded it through that tool. Loading is per run and recorded in the
// run's state. A Set is safe for concurrent use.
type Set struct {
	tools  []pipeline.Tool
	names  map[string]bool
	search *searchTool
	mu     sync.Mutex // serializes the loads of a run's concurrent search calls
}

// New returns a Set of the given tools. Give the agent [Set.Tools] and the
// runner [Set.Middleware]. New panics if a tool is nil or two tools share
// a name, or one is named [SearchToolName].
func New(tools ...pipeline.Tool) *Set {
	s := &Set{tools: slices.Clone(tools), names: make(map[string]bool, len(tools))}
	var catalogue strings.Builder
	catalogue.WriteString("Loads the full definitions of tools so that you can call them. Call it with the names of the tools you need before calling them. The tools:")
	for _, t := range tools {
		if t == nil {
			panic("deferred: New called with a nil tool")
		}
		name := t.Spec().Name
		if s.names[name] || name == SearchToolName {
			panic(fmt.Sprintf("deferred: New called with two tools named %q", name))
		}
		s.names[name] = true
		fmt.Fprintf(&catalogue, "\n- %s: %s", name, firstLine(t.Spec().Description))
	}
	s.search = &searchTool{set: s, spec: pipeline.ToolSpec{
		Name:        SearchToolName,
		Description: catalogue.String(),
		Parameters:  json.RawMessage(`{"type":"object","properties":{"names":{"type":"array","items":{"type":"string"},"description":"The names of the tools to load."}},"required":["names"],"additionalProperties":false}`),
		Strict:      true,
	}}
	return s
}

// firstLine returns the first line of a description.
func firstLine(desc string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(desc), "\n")
	return line
}

// Tools returns the tools to give the agent: the search tool, then the
// deferred tools, which the model calls once it loaded them.
func (s *Set) Tools() []pipeline.Tool {
	return append([]pipeline.Tool{s.search}, s.tools...)
}

// Middleware returns the model-stage middleware that leaves the deferred
// tools a run has not loaded out of its model calls. Put it anywhere in
// the chain (inside middleware/retry's, so that a fallback model gets the
// search it supports); a model call that offers none of the Set's tools
// passes through untouched.
//
// When the call's model searches tools itself (a [HostedSearcher] that
// agrees, such as the Responses adapter made with
// openai.WithHostedToolSearch), the call declares the deferred tools as
// that model's API wants them, and not the search tool; otherwise the
// search is the client-side one described in the package documentation.
func (s *Set) Middleware() pipeline.Middleware {
	return pipeline.Middleware{Name: "deferred", Model: func(next pipeline.Model) pipeline.Model {
		return pipeline.ModelFunc(func(ctx context.Context, c *pipeline.ModelCall) (*pipeline.ModelResponse, error) {
			if c.Turn == nil || !slices.ContainsFunc(c.Tools, func(t pipeline.ToolSpec) bool { return t.Name == SearchToolName }) {
				return next.Respond(ctx, c)
			}
			if !s.hosted(c) {
				loaded := s.loaded(c.Turn.Run)
				c.Tools = slices.DeleteFunc(slices.Clone(c.Tools), func(t pipeline.ToolSpec) bool {
					return s.names[t.Name] && !loaded[t.Name]
				})
			}
			return next.Respond(ctx, c)
		})
	}}
}

// hosted declares the call's deferred tools for its model's own search,
// if the model has one, and reports whether it did.
func (s *Set) hosted(c *pipeline.ModelCall) bool {
	h, ok := c.Model().(HostedSearcher)
	if !ok {
		return false
	}
	var own, deferred []pipeline.ToolSpec
	for _, t := range c.Tools {
		switch {
		case t.Name == SearchToolName:
		case s.names[t.Name]:
			deferred = append(deferred, t)
		default:
			own = append(own, t)
		}
	}
	decls, ok := h.DeferredTools(deferred)
	if ok {
		c.Tools = append(own, decls...)
	}
	return ok
}

// A HostedSearcher is a model whose API searches deferred tools itself,
// such as the Responses adapter made with openai.WithHostedToolSearch.
// DeferredTools returns the declarations that stand for the deferred
// tools specs (ok false: the model does not search them now, and the
// client-side search is used).
type HostedSearcher interface {
	DeferredTools(specs []pipeline.ToolSpec) (decls []pipeline.ToolSpec, ok bool)
}

// loaded returns the names of the tools the run loaded.
func (s *Set) loaded(run *state.Run) map[string]bool {
	out := map[string]bool{}
	raw, ok := run.Extension(loadedKey)
	if !ok {
		return out
	}
	var names []string
	if json.Unmarshal(raw, &names) != nil {
		return out
	}
	for _, n := range names {
		out[n] = true
	}
	return out
}

// load records names as loaded in the run and returns the known ones
// and the unknown ones.
func (s *Set) load(run *state.Run, names []string) (known, unknown []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	loaded := s.loaded(run)
	for _, n := range names {
		switch {
		case !s.names[n]:
			unknown = append(unknown, n)
		case !slices.Contains(known, n):
			known = append(known, n)
			loaded[n] = true
		}
	}
	all := make([]string, 0, len(loaded))
	for n := range loaded {
		all = append(all, n)
	}
	slices.Sort(all)
	raw, _ := json.Marshal(all) // strings always marshal
	run.SetExtension(loadedKey, raw)
	return known, unknown
}

// searchTool is the Set's search tool.
type searchTool struct {
	set  *Set
	spec pipeline.ToolSpec
}

func (t *searchTool) Spec() pipeline.ToolSpec { return t.spec }

// Call loads the named tools into the run.
func (t *searchTool) Call(_ context.Context, c *pipeline.ToolCall) (string, error) {
	var in struct {
		Names []string `json:"names"`
	}
	if err := json.Unmarshal([]byte(c.Arguments), &in); err != nil {
		return "", &pipeline.ArgumentError{Tool: c.Name, CallID: c.CallID, Err: err}
	}
	known, unknown := t.set.load(c.Turn.Run, in.Names)
	var b strings.Builder
	if len(known) > 0 {
		b.WriteString("Loaded: " + strings.Join(known, ", ") + ". You can call them now.")
	}
	if len(unknown) > 0 {
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		b.WriteString("Unknown: " + strings.Join(unknown, ", ") + ".")
	}
	if b.Len() == 0 {
		b.WriteString("No tool named.")
	}
	return b.String(), nil
}
