// Package deferred defers the definitions of an agent's tools until the
// model asks for them, for agents with many tools: a model call carries
// the names and one-line descriptions of the deferred tools, in the
// description of one search tool ([SearchToolName]), instead of every
// tool's description and JSON schema; the model calls the search tool
// with the names it needs, and from the next model call of the run on
// those tools are sent in full and it calls them.
//
//	set := deferred.New(manyTools...)
//	agent := &pipeline.Agent{Name: "ops", Model: m, Tools: append(coreTools, set.Tools()...)}
//	runner := pipeline.NewRunner(pipeline.WithMiddleware(set.Middleware()))
//
// A call to a deferred tool that the run has not loaded (the model may
// guess its arguments from the one-line description) runs like any call;
// its arguments are checked as the tool checks them.
//
// What a run loaded is recorded in its state, so a resumed run, in any
// process, keeps offering it. The search is client-side and works with
// any model. A model whose API searches tools itself says so as a
// [HostedSearcher]: the Responses adapter made with
// openai.WithHostedToolSearch declares the hosted tool_search tool and the
// deferred tools with defer_loading instead (which only some models
// accept), and the API loads what the model looks for.
//
// bench's BenchmarkDeferred gives the request bytes per model call with
// 200 tools, deferred against all sent.
package deferred
