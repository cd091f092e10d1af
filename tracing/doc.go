// Package tracing is turnkit's OpenTelemetry middleware: traces and metrics
// of agent runs with the GenAI semantic conventions.
//
//	runner := pipeline.NewRunner(pipeline.WithMiddleware(
//		tracing.Middleware(tracing.WithTracerProvider(tp), tracing.WithMeterProvider(mp)),
//		logging.Middleware(logger),
//		// persistence, approval, guardrails ...
//	))
//
// Put it first: its spans then enclose what every other middleware does,
// and it sees their verdicts.
//
// # Spans
//
// One span per stage, nested as the stages are:
//
//	invoke_agent {agent}          the run, or its resumption (internal)
//	└── turn                      one per turn (internal)
//	    ├── chat {model}          the model call (client)
//	    ├── execute_tool {tool}   each tool call, concurrent ones side by side (internal; client for an MCP tool)
//	    └── handoff {agent}       a short span when the turn hands off (internal)
//
// Attributes follow the GenAI conventions (semantic conventions v1.41.0; the
// keys left go.opentelemetry.io/otel/semconv in v1.42.0, so they are kept in
// an internal package checked against v1.41.0): gen_ai.operation.name,
// gen_ai.provider.name, gen_ai.agent.name, gen_ai.conversation.id (the
// run's session ID; for a nested run, the outer run's),
// gen_ai.request.model, temperature, top_p, max_tokens,
// gen_ai.request.stream, gen_ai.response.id, gen_ai.response.model,
// gen_ai.usage.input_tokens and output_tokens (and reasoning and cache-read
// tokens when reported), gen_ai.tool.name, gen_ai.tool.call.id,
// gen_ai.tool.type, gen_ai.tool.description and error.type. What the
// conventions do not name is under turnkit.*: the run ID and outcome, the
// turn number and next step, a tool call's status (completed, rejected,
// pending), the handoff's agents, and turnkit.continuation.lost on a model
// call whose stored response the server no longer had (the call was sent
// again with the whole input; see [pipeline.ModelResponse]).
//
// gen_ai.provider.name comes from a model that implements [ProviderNamer],
// else from [WithProviderName].
//
// # MCP tools
//
// The call of a tool that an MCP server serves ([MCPTool], such as those of
// package tool/mcp) gets no span of its own: as the MCP conventions ask of
// an instrumentation that already traces the tool call, its execute_tool
// span is a client span and carries the MCP client span's attributes too
// (semantic conventions v1.41.0, kept in an internal package like the GenAI
// keys): mcp.method.name (tools/call), mcp.session.id (streamable HTTP
// only), mcp.protocol.version, network.transport (pipe for stdio, tcp for
// HTTP), network.protocol.name, server.address and server.port, and
// rpc.response.status_code when the server answered with a JSON-RPC error;
// error.type is then that code, and tool_error for a result with isError
// set. turnkit.mcp.server is the server's configured name.
//
// Message content, tool arguments and tool outputs can hold personal or
// secret data: they are recorded (gen_ai.system_instructions,
// gen_ai.input.messages, gen_ai.output.messages, gen_ai.tool.definitions,
// gen_ai.tool.call.arguments, gen_ai.tool.call.result, guardrail and
// decision messages) only with [WithContentCapture].
//
// # Events
//
// Guardrail verdicts and approvals are read from the run's state, which the
// guardrail and approval middleware write to, so this package depends on
// neither:
//
//   - turnkit.guardrail on the turn's span for input and output
//     guardrails, and on the tool call's span for the tool guardrails of
//     that call (name, stage, tripped, behavior);
//   - turnkit.approval.requested on the span of a call that waits for a
//     decision;
//   - turnkit.approval.decision on the span of a call that ran, or was
//     rejected, under a recorded decision (outcome, always).
//
// An error is recorded on the span of every stage it passes through
// (RecordError, status Error, error.type). A tool's own failure that was
// reported to the model marks the tool call's span only.
//
// Spans record what happened: the chat span and the model-call metrics
// are those of the call to the model itself ([pipeline.ModelCall.Observe]),
// so a model call that a stage inside tracing refused (a blocking input
// guardrail that tripped) has neither; its turn span records the verdict
// and the error.
//
// # Nested runs
//
// The run of an agent used as a tool ([pipeline.AgentTool]) has no session
// of its own (its items are not the conversation's), but it belongs to
// the outer run's conversation: its spans carry the outer run's session ID
// as gen_ai.conversation.id, and nest under the outer run's tool call.
//
// # Resuming
//
// The run's span context is saved in the run's state (W3C trace context by
// default, see [WithPropagator]) so that a checkpoint carries it. A resumed
// run, in this process or another, starts a span that links to the span it
// paused in; with [WithContinueTrace] that span is its parent instead, so
// the whole run is one trace.
//
// # Metrics
//
//   - gen_ai.client.operation.duration (s) and gen_ai.client.token.usage
//     ({token}, by gen_ai.token.type) per model call, with the conventions'
//     bucket boundaries;
//   - turnkit.tool.calls and turnkit.tool.duration by tool and status;
//   - turnkit.guardrail.trips by guardrail and stage;
//   - turnkit.approvals by tool and outcome (requested, approved, rejected).
//
// # Cost
//
// Attributes and events are built only for spans that record, metric
// attributes only for enabled instruments. Under a no-op or unset tracer
// provider the stages of a run start no spans at all: tracing then costs
// two allocations per run and none per turn (see BenchmarkTurn).
package tracing
