// Package anthropic is a [pipeline.Model] over Anthropic's Messages API,
// through the official Go SDK (github.com/anthropics/anthropic-sdk-go/v2).
//
//	client := anthropic.NewClient() // reads ANTHROPIC_API_KEY
//	agent := &pipeline.Agent{
//		Name:  "assistant",
//		Model: turnkitanthropic.New(client, turnkitanthropic.WithModel("claude-sonnet-4-5")),
//	}
//
// The adapter writes the request body itself and sends it with the
// client's Post to v1/messages: the client's API key, base URL, HTTP
// client, retries and typed errors apply as to Messages.New, and a plain
// call's timeout is the one Messages.New chooses
// (CalculateNonStreamingTimeout); the SDK does not marshal the body again.
// The adapter reads the response itself too: a body or an event as the API
// writes it by hand, any other shape with encoding/json (the two read the
// same; fuzz tests hold them to it), and a stream's server-sent events
// with a reader of its own, as the SDK's decoder reads them; the SDK's
// decoder reads a stream of another content type (one a middleware such as
// the SDK's Bedrock one registered a decoder for) or a traced body.
// What Messages.New adds of its own, the SDK's OpenTelemetry span named
// anthropic.messages.create, is not made: turnkit's tracing records the
// model call (gen_ai.provider.name "anthropic").
//
// # Items and content blocks
//
// The run's items become messages, consecutive items of one side joining
// one message: user messages (text, images as base64 from a data URL or by
// URL, PDF and plain-text files as documents) and tool outputs
// (tool_result blocks, whose content may hold text, images and documents)
// on the user side; assistant messages (text blocks), calls (tool_use
// blocks, parallel calls in one message) and reasoning on the assistant
// side. System messages join the instructions in the system prompt.
//
// A response's blocks come back as items in order: text as assistant
// messages, tool_use as calls, thinking and redacted_thinking blocks as
// reasoning items that keep the block (signature or data included) and
// send it back verbatim, any other block as an opaque item of type
// "anthropic.<type>" that is sent back verbatim too. A response stopped
// for a refusal (stop_reason "refusal") becomes a refusal message, which a
// structured-output agent reports as a [*pipeline.RefusalError].
//
// Structured output uses the API's native structured outputs
// (output_config), or, with [WithOutputTool] for models without them, a
// forced tool whose input schema is the output's: its tool_use input
// becomes the assistant message the run decodes, with the same typed
// errors.
//
// What the API cannot take fails the call before the request with an
// [*InputError] naming the item and the part, never dropped silently: the
// Responses API's hosted calls, MCP approvals and custom tool calls,
// opaque items of another provider, images and files given by another
// API's file ID, files other than PDF and plain text.
//
// # Reasoning of other providers
//
// A run may hand off between agents on different providers. Reasoning
// items that did not come from the Messages API (an OpenAI reasoning item,
// whose encrypted content only OpenAI reads) are dropped from the request
// and kept in the session; the OpenAI adapters, in turn, do not send
// Anthropic's thinking. Each provider sees its own reasoning again when the
// run comes back to it.
//
// # Structured output, settings, errors
//
// An agent's output type ([pipeline.OutputSpec]) is sent as native
// structured output (output_config.format, a JSON schema); the final text
// is decoded by the runner, so a text that does not match is a
// [*pipeline.OutputError]. Provider settings are this package's options:
// max_tokens ([WithMaxTokens]; the agent's MaxOutputTokens wins), extended
// thinking ([WithThinking]), cache_control breakpoints
// ([WithCacheControl]). Of [pipeline.ModelSettings], the adapter reads
// Model, MaxOutputTokens, ToolChoice ("required" is "any"),
// ParallelToolCalls and Metadata["user_id"]; the Messages API of this SDK
// version takes no temperature or top_p.
//
// Usage counts all input tokens in InputTokens (the API reports cache
// reads and writes apart from input_tokens); CachedTokens are those read
// from the cache and CacheWriteTokens those written to it
// (cache_creation_input_tokens). API errors are [*pipeline.ModelError] values with the
// status, the request-id header and Retryable for 408, 409, 429 and 5xx
// (529 overloaded included) unless x-should-retry says otherwise.
package anthropic
