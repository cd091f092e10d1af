// Package mcp turns the tools of MCP (Model Context Protocol) servers into
// [pipeline.Tool] values, through the official Go MCP SDK
// (github.com/modelcontextprotocol/go-sdk, imported here as sdk).
//
// [Connect] connects to the [Server]s it is given, lists their tools once
// and returns a [Toolset]; [Toolset.Tools] hands them out as ordinary
// pipeline tools, so approval, guardrails, persistence, checkpoints,
// tracing and logging treat them like any other tool:
//
//	ts, err := mcp.Connect(ctx, []mcp.Server{
//		{Name: "files", Command: &mcp.Command{Path: "mcp-server-filesystem", Args: []string{"/srv"}}},
//		{Name: "search", HTTP: &mcp.HTTP{URL: "http://127.0.0.1:8080/mcp"}},
//	})
//	if err != nil { ... }
//	defer ts.Close()
//	agent := &pipeline.Agent{Name: "assistant", Model: m, Tools: ts.Tools()}
//
// # Transports
//
// A server is reached in exactly one of four ways: a stdio [Command] the
// toolset starts and stops (Close ends it), a streamable [HTTP] endpoint
// (headers and auth through the caller's http.Client), any other go-sdk
// Transport (such as an in-memory one), or a session the caller connected
// and owns (the toolset never closes it).
//
// # Tool lists
//
// Each server's tools are listed once, at Connect, and cached. When a
// server sends notifications/tools/list_changed, its list is fetched again
// in the background, as it is after a stdio server was restarted;
// [Toolset.Refresh] does the same on demand (for a
// caller-owned session, whose notifications the toolset does not see).
// Tools already handed out keep their identity and see a new description
// or schema at once; a tool the server added appears in the next call of
// [Toolset.Tools] (agents are plain values: build the agent again to offer
// it). A refresh that fails, or that would make two tools share a name,
// keeps the previous list and reports the error to [WithErrorHandler].
//
// # Names and filters
//
// Server.Allow and Server.Deny filter a server's tools by their MCP names
// ([path.Match] patterns); the filters given to [Toolset.Tools] filter by
// the names the model sees, so each agent may take its own subset. A name
// the model API would refuse has its other characters replaced by '_'.
// When two servers offer the same name, Connect fails with a
// [*DuplicateToolError] unless [WithServerPrefix] is given, which names
// every tool "<server>_<tool>".
//
// # Schemas
//
// The input schema goes to the model as the server gave it (the same JSON
// value). The tool's spec is Strict only when the schema qualifies for
// strict mode: every object closes its properties (additionalProperties
// false) and requires all of them, and only keywords strict mode accepts
// are used.
//
// # One JSON Schema implementation?
//
// The go-sdk brings github.com/google/jsonschema-go (inference and
// validation), so function tools could move onto it from package tool's
// own validator. They do not, for three reasons measured in
// schema_compare_test.go (run of 2026-12-01, one call with three nested
// objects, validated and decoded):
//
//   - Paths: for a bad value at lines[2].qty, jsonschema-go names the
//     schema's path (/properties/lines/items/properties/qty), not the
//     value's: which element is wrong is lost, while
//     [pipeline.ArgumentError] names it, and the model needs it to fix the
//     call.
//   - Tags: its inference takes a jsonschema struct tag as a description
//     and refuses key=value tags (`jsonschema:"enum=a,enum=b"`), the form
//     tool.Func's schemas are written in: every existing tool would change.
//   - Cost: 1.4 to 1.8 times the time, 3.3 times the allocations (216
//     against 66) and 1.8 times the bytes of tool.Func's validation and
//     decoding.
//
// MCP tools check only that the arguments are a JSON object; the server
// validates them against its schema, and an invalid call comes back as an
// isError result. The test fails when
// jsonschema-go starts naming the value or accepting the tags, so that
// this choice is revisited.
//
// # Calls
//
// Arguments are sent as the JSON object the model wrote; anything else is a
// [*pipeline.ArgumentError]. The call's idempotency key
// ([pipeline.ToolCall.IdempotencyKey]: run ID and call ID) travels in the
// request's _meta under [MetaIdempotencyKey], so a server can recognise a
// call retried after a crash or a resume.
//
// A transport failure, a JSON-RPC error, a malformed result, a timeout
// (Server.Timeout) or a crashed stdio server is an [*Error] wrapping one of
// [ErrTransport], [ErrProtocol], [ErrTimeout] or [ErrServerExited].
// Cancelling the call's context cancels the MCP request
// (notifications/cancelled) and the call returns the context's error. A
// server with a Timeout bounds its calls with it alone; a server without
// one gets the runner's default (pipeline.WithToolTimeout), whose timeout
// is a [*pipeline.ToolTimeoutError].
//
// # Conditions
//
// Server.Enabled, a [pipeline.Condition], enables all of a server's tools
// at once, per turn or per run: on a turn it reports false for, none of
// them is sent to the model, and a call to one is answered with a
// [*pipeline.ToolDisabledError] without reaching the server.
//
// # Results
//
// A [Tool] is a [pipeline.ContentTool]. When a result holds an image or an
// embedded resource with a blob, the runner gets it as content parts, in
// the result's order (see [state.ToolOutputContent]):
//
//   - text content: a text part ([state.TextPart]), as it is;
//   - an image (base64 data and a MIME type): an input_image,
//     [state.ImageURL]("data:<mimeType>;base64,<data>", "auto");
//   - an embedded resource with a blob: an input_file,
//     [state.FileData] named after the last element of its URI, with a
//     data URL of its MIME type (application/octet-stream when it has
//     none);
//   - an embedded resource with text, a resource link, audio: a text part
//     holding the one line of JSON described below, without binary data.
//     Audio stays text because the Responses API has no audio part in a
//     tool's output (input_audio is not allowed there);
//   - structuredContent that no text part holds: a last text part, its
//     JSON.
//
// The call's text (what guardrails, logs and a terminal tool's final
// output see) is then the text parts' text, joined ([state.JoinText]).
// The Responses API takes these parts; the Chat Completions adapter
// refuses them with a typed error, so for an agent on Chat Completions
// connect with [WithTextResults], which makes every result text (images
// and blobs described, as below).
//
// Any other result, such as one with text only, is the tool's output
// text, a plain string: text content as it is, the parts joined by
// newlines; other content (audio, resource links, embedded resources,
// an image without a MIME type) described as one line of JSON per part, without its binary
// data (its size is given); structuredContent added as JSON unless a text
// part already holds the same value. [Tool.Call], for callers that take
// text only, always answers this way. An isError result is returned as a
// [*ToolError] whose output is this text, which the runner reports to the
// model as the tool's error output by default.
//
// # Prompts and resources
//
// Besides tools, a server may offer prompts (message templates with
// arguments) and resources (files, documents, records). [Toolset.Prompts]
// and [Toolset.Resources] list every server's; [Toolset.GetPrompt] returns
// a prompt's messages as items a run takes as input, and
// [Toolset.ReadResource] a resource's contents as content parts, for a
// user message (state.UserContent) or a tool's output:
//
//	parts, err := ts.ReadResource(ctx, "docs", "file:///handbook.md")
//	input := []state.Item{state.UserContent(append([]state.ContentPart{state.TextPart("Summarise:")}, parts...)...)}
//	res, err := runner.Run(ctx, agent, input)
//
// A server may also ask the client for a model call (sampling). That is
// off by default; [WithSampling] serves such requests with runs of an
// agent's model.
//
// # Elicitation
//
// A server may ask the user for input while its tool runs (MCP
// elicitation: a message and a requested schema), by a request during
// the call (protocol versions up to 2025-11-25) or by an input request in
// the call's result that the Go SDK answers and retries (2026-07-28's
// multi round-trip requests); both reach the same handler. It is off by
// default. With [WithElicitation] the run pauses like an approval: the
// call ends (the server sees it cancelled and the request answered
// "cancel"), the interruption ([state.Approval.Elicitation]) carries the
// server, the message and the schema, and once the answer is on the
// state ([Accept], or state.Run.AnswerElicitation with state.Decline or
// state.Cancel) the run resumes in any process:
//
//	res, err := runner.Run(ctx, agent, input) // res.Interruptions()[0].Elicitation.Message: "How many guests?"
//	run := res.State()
//	err = mcp.Accept(run, res.Interruptions()[0].CallID, map[string]any{"guests": 4})
//	res, err = runner.Resume(ctx, agent, run) // the tool is called again; its server gets {"guests": 4}
//
// The resumed call is the tool's second call, with the same arguments and
// idempotency key: the server gets each recorded answer when it asks the
// same thing again (the same message and schema), and a different request
// pauses the run again. A tool that acts before it asks would act twice;
// for such a tool, answer in-process with [WithElicitationHandler], which
// keeps the call open and does not pause the run. Either way, calls to
// one server are then sent one at a time, so that a request is known to
// come from the call in flight.
//
// # Restarts
//
// A stdio server that the toolset started and that has exited is started
// again at most once per call. A call that finds the server gone restarts
// it and is sent to the new process. A call during which the server dies
// restarts it too, but is sent again only when the tool is annotated
// read-only or idempotent (readOnlyHint, idempotentHint), with the same
// idempotency key; otherwise it returns an [*Error] wrapping
// [ErrServerExited] and the next call uses the new process. A second crash
// in the same call is returned as it is. Servers reached over HTTP, another
// transport or a caller-owned session are never restarted.
//
// # Tracing
//
// Package tracing needs nothing from this package: a [Tool] tells it about
// its server through methods ([Tool.Server], [Tool.MCPSession],
// [Tool.MCPTransport]) that its MCPTool interface asks for, and an
// [*Error] gives the JSON-RPC code of a server's error
// ([Error.JSONRPCCode]). The execute_tool span of an MCP tool's call then
// carries the MCP semantic conventions' attributes (mcp.method.name,
// mcp.session.id, server.address, network.transport …); error.type is the
// JSON-RPC code, or tool_error for an isError result, as they ask.
//
// # Approval
//
// MCP tools work with approval.ByTool like any tool. [FromServers] is a
// policy (it satisfies approval.Policy) that holds every call to the tools
// of the named servers, and Server.NeedsApproval makes a server's tools ask
// for approval themselves ([pipeline.ApprovalRequirer]).
package mcp
