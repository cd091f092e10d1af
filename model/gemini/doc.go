// Package gemini provides a [pipeline.Model] over the Gemini API, through
// Google's official Go client, google.golang.org/genai: [New] takes a
// *genai.Client and calls generateContent, or streamGenerateContent when
// the run streams. Its tests run against the Gemini Developer API's
// shapes (genai.BackendGeminiAPI); the Vertex AI backend goes through the
// same client calls, untested here.
//
//	client, err := genai.NewClient(ctx, &genai.ClientConfig{Backend: genai.BackendGeminiAPI}) // reads GEMINI_API_KEY
//	…
//	agent := &pipeline.Agent{
//		Name:     "assistant",
//		Model:    gemini.New(client),
//		Settings: pipeline.ModelSettings{Model: "gemini-2.5-flash"},
//	}
//
// # What is sent
//
// The agent's instructions, and any system item of the input, become the
// system instruction. The input items become contents, consecutive items of
// one role sharing a content (so the outputs of parallel calls answer them
// in one user turn):
//
//   - a user message is a user text part, or its content parts: text;
//     images and files given inline (a base64 data URL) as inline data,
//     with a file's name as the display name; given by URL (a Files API
//     URI, a Cloud Storage or web URL) as file data, with the MIME type the
//     URL's extension gives (none otherwise: the API knows its own files').
//     An image's detail is a hint the API takes per request
//     ([WithConfig], MediaResolution), not per part.
//   - an assistant message, of any API, is a model text part;
//   - a tool or handoff call is a model functionCall part, its arguments the
//     JSON object the model wrote; an output is a user functionResponse
//     part named after its call, whose response is {"output": text} and
//     whose parts are the output's images and files (the text parts are
//     joined into the output);
//   - Gemini's own reasoning items go back as they came (below).
//
// Items the API cannot take fail the call before any request with an
// [*InputError] naming the item and the part (it wraps
// [ErrUnsupportedItem]): another API's hosted calls, custom tool calls, MCP
// approvals and opaque items, images and files by another API's file ID,
// data URLs that are not base64, call arguments that are not a JSON
// object, an output whose function name is unknown. Nothing is dropped
// silently, with one rule for a run that hands off between providers:
// another API's reasoning items (OpenAI's or Anthropic's), and the opaque
// items another adapter made for its provider only (of type
// "<provider>.<kind>", carrying the provider's block under "<provider>",
// as model/anthropic writes them), are not sent, as the Gemini API could
// not read them, and stay in the run and the session.
//
// Function tools (handoffs included) are function declarations with their
// JSON schema (parametersJsonSchema); a hosted tool ([pipeline.ToolSpec]
// Hosted) is the Gemini Tool object it declares, such as
// {"googleSearch":{}} or {"codeExecution":{}}; a custom tool, or a hosted
// one of another API, is an error wrapping [ErrUnsupportedTool]. An
// agent's output type is the response schema (responseJsonSchema, with
// the JSON MIME type).
//
// Of [pipeline.ModelSettings], the model name, temperature, top-p, max
// output tokens and tool choice ("auto", "required" as ANY, "none", or a
// tool name as ANY with that one allowed) are sent; the reasoning effort
// is the thinking level (minimal, low, medium, high; "none" is a thinking
// budget of 0) unless [WithThinking] is given; an effort of another name
// fails the call with [ErrUnsupportedSetting]. Parallel tool calls and
// metadata have no Gemini equivalent and are not sent. (OpenAI's own
// settings, such as truncation, store or a previous response to continue,
// are model/openai's options and cannot be given to this adapter; the
// Gemini API keeps no conversation.) Gemini's own settings are this package's
// options: [WithSafetySettings], [WithThinking] (budget, level, thought
// summaries), [WithHTTPOptions], and [WithConfig] for the rest.
//
// # What comes back
//
// The first candidate's parts become items in order. Text is an assistant
// message; a function call is a tool call whose call ID is the API's ID
// or, when the API gives none, one made from the response ID (the same in
// a streamed and a plain response), which is not sent back; a thought
// (thought: true) is a reasoning item whose summary is its text. A
// thought signature on a text or function call part is a reasoning item
// of its own just before the part's item. These reasoning items carry a
// "gemini" member in their JSON, which marks them as this API's, and are
// sent back unchanged: a thought as a thought part, a signature on the
// part of the item that follows it, as the API requires for function
// calls. Any other part (code the model ran, its result, inline data it
// made …) is an opaque item of type "gemini.<kind>" (such as
// "gemini.executableCode") holding the part under "gemini", sent back as
// it is. The "gemini" member marks these items, and the reasoning items
// above, as this provider's own, for the other adapters' rule: not sent
// to their providers, kept in the session. The client decodes responses into its own types, so a
// field it does not know never reaches the adapter, and call arguments
// come back with their keys sorted and their numbers as float64.
//
// Usage maps the prompt (with the tool-use prompt) to input tokens, the
// candidates and the thoughts to output tokens (as the Responses API's
// output includes reasoning), the thoughts to reasoning tokens, and the
// cached content to cached tokens. A response that stops at MAX_TOKENS
// returns what the model produced.
//
// # Streaming
//
// When the run streams, the adapter emits a [pipeline.TextDelta] per text
// chunk (thoughts are not text) and gathers the chunks' parts, joining the
// text the stream split, into the response a plain call returns, so
// streamed and plain runs record identical items. A stream that ends
// before a chunk with a finish reason is a retryable error wrapping
// [ErrIncompleteStream]; text deltas may have reached the consumer by
// then. A cancelled context returns the context's error and closes the
// stream; no goroutine is left behind.
//
// # Errors
//
// Errors are translated once, here: a context error is returned as it is;
// every other failure is a [*pipeline.ModelError]. An API error carries
// the HTTP status, the API's status name as the code (such as
// RESOURCE_EXHAUSTED) and is retryable for 408, 429 and 5xx; its Err
// wraps the client's genai.APIError. The client passes on no response
// headers with its errors, so [New] makes a copy of the client whose
// transport records each response's status and request ID (its
// X-Request-Id or X-Goog-Request-Id header, when the API or a proxy sets
// one) for the call that made it. A blocked prompt or answer (SAFETY,
// RECITATION, PROHIBITED_CONTENT …) is a [*FinishError] wrapping
// [ErrBlocked] and a [*pipeline.RefusalError] (the Gemini API refuses
// with a finish reason, not a refusal text); another abnormal finish
// (MALFORMED_FUNCTION_CALL, which is retryable, UNEXPECTED_TOOL_CALL …)
// one wrapping [ErrAbnormalFinish]. Network failures and cut streams are
// retryable. The adapter never retries: set the client's retry options
// (genai.HTTPOptions RetryOptions, or [WithHTTPOptions]).
//
// The adapter passes model/modeltest, the conformance suite of turnkit's
// adapters, through the real client, but for its refusal case: a Gemini
// refusal has no text to compare.
//
// # Module
//
// This package is a module of its own, github.com/turnkit/turnkit/model/gemini,
// so that the library's go.mod does not list the client's dependencies.
// Measured with genai v1.77.0, in a program that imports pipeline,
// model/openai and tool: inside the library's module, genai would leave
// that program's go.sum as it is (22 hashes of module contents, 25 of
// go.mod files: the graph is pruned), but would add 15 requirements to the
// library's go.mod (genai, grpc, protobuf, cloud.google.com/go/auth,
// opencensus, s2a, websocket …) and 12 modules to the program's build
// list, where minimal version selection would raise its own grpc or
// protobuf to at least genai's versions though it never imports them.
// In a module of its own, only the programs that import this package see
// any of it: the core with this package has 47 modules with source hashes
// in its go.sum and 132 in its build list, against 22 and 80 for the
// core alone, which this module leaves as they were.
//
// The tracing middleware records gen_ai.provider.name "gcp.gemini" (see
// [Model.ProviderName]).
package gemini
