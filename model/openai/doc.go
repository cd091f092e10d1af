// Package openai provides [pipeline.Model] adapters over the official
// openai-go client (github.com/openai/openai-go/v3): [New] speaks the
// Responses API, [NewChat] speaks Chat Completions, which many
// OpenAI-compatible servers offer instead.
//
//	client := openai.NewClient() // from openai-go; reads OPENAI_API_KEY
//	agent := &pipeline.Agent{
//		Name:     "assistant",
//		Model:    turnkitopenai.New(client),
//		Settings: pipeline.ModelSettings{Model: "gpt-5-mini"},
//	}
//
// # What is sent
//
// The Responses adapter sends the agent's instructions, the run's items as
// their canonical JSON (each item's JSON is written once into the input
// array and never decoded or re-encoded, so reasoning items keep their
// encrypted content and ids), the tools (function tools and handoffs, with
// their JSON schemas and strict flags), and the settings of
// [pipeline.ModelSettings]: temperature, top_p, max output tokens, tool
// choice ("auto", "required", "none" or a tool name), parallel tool calls,
// reasoning effort and metadata. The Responses API's own settings are
// this package's options, the model's for every agent it serves:
// [WithReasoningSummary], [WithTruncation], [WithStore], [WithInclude];
// an agent that needs others gets a [Model] of its own. The input is the
// run's whole history, unless the server keeps the conversation: with
// [ChainResponses] (previous_response_id, set from the last response, and
// across the runs of a session with the persistence middleware's
// WithContinuation) or [InConversation] (a conversation ID) each call
// sends only the items the server has not seen. [ChainFrom] starts such a
// chain from a response named by hand: that response is taken to hold
// the history the run started from, and only the run's own items are sent
// with it. A tool output
// made of content parts (see [pipeline.ContentTool] and tool.Content) is
// a function_call_output whose output is the list of its input_text,
// input_image and input_file parts.
//
// A run may hand off to an agent on another provider and back. Items that
// adapter made for its own provider only (model/anthropic's thinking
// blocks, kept as reasoning items, and its opaque content blocks) are not
// sent to OpenAI, by either adapter: they stay in the session, and the
// other adapter sends them again when the run goes back to it. Calls,
// outputs and messages of every provider are sent.
//
// # What comes back
//
// Output items become items in the order the model produced them:
// messages (refusals included, their text being the refusal) become
// assistant messages, function calls become tool calls (the runner marks
// handoffs), reasoning becomes reasoning items; the calls of the tools the
// API defines (web_search_call, file_search_call, code_interpreter_call,
// image_generation_call, mcp_call, mcp_list_tools, computer_call,
// local_shell_call …) become hosted calls ([state.KindHostedCall]), and
// an item of any other type, one the API added after this release
// included, becomes an opaque item ([state.KindOpaque]), never an error.
// Each keeps its JSON as the API sent it, compacted, and is replayed to the
// model as it is. Only a message with a role other than assistant is an
// error, wrapping [ErrUnsupportedItem]. Usage maps input, output,
// reasoning and cached tokens. An "incomplete" response returns what the
// model produced; a "failed" one is an error.
//
// # Streaming
//
// When the run streams ([pipeline.Runner.Stream]) the adapter reads the
// server-sent events, emits a [pipeline.TextDelta] for each output_text
// (and refusal) delta, and returns the response the terminal event
// carries, so streamed and plain runs record identical items. A stream
// that ends before its terminal event is a retryable error wrapping
// [ErrIncompleteStream]; text deltas may have reached the consumer by
// then. A cancelled context closes the response body and returns the
// context's error; no goroutine is left behind.
//
// # Errors
//
// Errors are translated once, here: a context error is returned as it is;
// every other failure is a [*pipeline.ModelError] with the HTTP status,
// the provider's error code and request ID, and a Retryable flag (429,
// 408, 409, 5xx, network failures, cut streams, and failed responses with
// code server_error or rate_limit_exceeded), and the wait the server asked
// for in RetryAfter (its retry-after-ms or Retry-After header). Its Err
// wraps the client's *openai.Error for API errors, or [*DecodeError] /
// [*FailedError]. The adapters never retry: the client's own retries apply
// (set them with option.WithMaxRetries on the client, or
// [WithRequestOptions]). To retry with backoff in the pipeline instead,
// with each attempt traced and a fallback model, use middleware/retry and
// option.WithMaxRetries(0).
//
// # Chat Completions
//
// [ChatModel] maps tools, settings, usage and errors the same way. Items
// become chat messages: the instructions and system items as system
// messages, user messages, an assistant message with the tool calls that
// follow it, and a tool message per output. Reasoning items are not sent.
// A user message's images and files become content parts; a tool output's
// text parts are joined into the tool message's text, and an image or a
// file in a tool output fails the call before the request with an error
// wrapping [ErrUnsupportedItem] that names the call (tool messages take
// text only). Chat items carry no item IDs. Of this package's options it
// takes [WithStore]; the Responses API's others ([WithTruncation],
// [WithReasoningSummary], [WithInclude]) fail its calls with
// [ErrUnsupportedSetting]. It keeps no conversation on the server: a run
// with [ChainResponses] or [ChainFrom] sends it the whole input.
package openai
