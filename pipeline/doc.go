// Package pipeline is turnkit's core: the turn loop and the middleware that
// wraps it, composed the way net/http handlers are.
//
// A run is a loop of turns. Each turn calls the model, runs the tools it
// asked for, and decides the next step ([NextStep]): a final output, another
// turn, a handoff to another agent, or an interruption while calls wait for
// approval. A [Middleware] may wrap four stages: the whole run or its
// resumption ([RunHandler]), each turn ([Handler]), the model call of a
// turn ([Model]) and each tool call ([ToolHandler]).
//
//	runner := pipeline.NewRunner(pipeline.WithMiddleware(
//		tracing.Middleware(),
//		logging.Middleware(logger),
//		persistence.Middleware(store),
//		approval.Require(approval.ByTool("delete_file")),
//		guardrails.Output(noSecrets),
//	))
//	res, err := runner.Run(ctx, agent, pipeline.UserInput("hello"))
//
// # Ordering
//
// The first middleware is the outermost on every stage. The recommended
// order is tracing → logging → persistence → checkpoint → approval →
// guardrails → core, and the order carries meaning: [Stack] defines it
// once, says why, and builds it from the places a program fills.
//
// # Positions
//
// Every item gets its position (Seq) once, in the core: the response's items
// in the order the model produced them, then one reserved position per call
// for its output, in call order. Middleware sees positions, never has to
// make them, and an output decided later lands where it belongs.
//
// # Streaming
//
// Streaming is not a second loop. [Runner.Stream] runs the same loop with an
// event sink: the model stage streams text deltas to it and still returns
// the whole response, so every middleware sees the same thing in both modes
// and both record the same items. Text deltas reach a streaming consumer
// before the output guardrails run; the session and the result still obey
// their verdict. Each tool call reports [ToolCallStarted] and
// [ToolCallEnded] (status, output, duration) as it happens, so a fast
// call's output does not wait for a slow sibling; the outputs are still
// recorded, and announced with [ItemCreated], in call order. Events are
// delivered synchronously: the run waits while the consumer handles one.
//
// # Resuming: which entry point
//
// There is one loop, [Runner.Resume] (and [Runner.ResumeStream]); the two
// other entry points are that call with a store's claim around it. Pick
// by where the state lives:
//
//   - The program holds the state (res.State(), or a checkpoint it
//     marshalled itself) and no other worker can resume it: decide on it
//     and call [Runner.Resume].
//   - The state is in a state.Store and several workers may resume it, but
//     the runner has no checkpointer: load it, decide, and call
//     approval.Resume, which claims it with a compare-and-swap first, so
//     one worker runs its tools, and saves the result.
//   - The runner has middleware/checkpoint in its chain (crash-safe runs):
//     its run stage claims and saves on its own, so decide on the loaded
//     state and call [Runner.Resume]; to take over a run by ID whose
//     worker died (or whose decisions were saved), call
//     Checkpointer.Resume, which also completes a finished run's lost
//     final commit. riverrun does this for runs that are River jobs.
//
// A state that is behind its run is refused by each of them with an error
// wrapping state.ErrStale, before any model call or tool.
//
// # Turn limits
//
// Two options set a run's turn limit: the runner's [WithMaxTurns], for
// every run it serves, and [WithRunMaxTurns], for one run (given to
// [Runner.Run] or [Runner.Stream]).
// A run's limit is its own WithRunMaxTurns if it was ever given one, else
// the runner's, else [DefaultMaxTurns]. A run's own limit is kept in its
// state, so a resumed run keeps it in any process; the runner's applies
// to each invocation of a run that has none.
//
// # Errors and the resumable state
//
// A run that fails keeps what it did: its state is resumable. Every error
// a run returns once it started, in either mode, is a [*RunError] that
// carries a detached copy of the state as it was when the run failed,
// whatever the cause inside (a *persistence.AppendError, a tripwire, a
// model error, the context's error). errors.Is and errors.As see through
// it to the cause, and its message is the cause's. So a plain
// "return err" up the stack loses nothing: where the error is handled,
// [StateOf] finds the state, ready for [Runner.Resume] or a checkpoint:
//
//	if st, ok := pipeline.StateOf(err); ok {
//		res, err = runner.Resume(ctx, agent, st) // after the cause is fixed
//	}
//
// Any error with a State() *state.Run method is found the same way. A
// streamed run's last value is that error; its [RunError.Result] is what
// [Runner.Run] returns beside it. Errors returned before a run started (a
// nil agent, an invalid input, a run with nothing to resume) carry no
// state: the caller's state, if any, is unchanged.
//
// # Tool errors
//
// A tool's error does not end the run by default: the text
// [WithToolErrorText] makes of it becomes the call's output, which the
// model sees and may act on (retry, apologise, pick another tool). The
// error itself is kept for the program: a tool-stage middleware reads it
// in [ToolResult].Err after the stage below it returns, and a stream's
// consumer in [ToolCallEnded].Err; errors.As finds the tool's own type
// there. [WithToolErrorsAbort] ends the run instead, with a [*ToolError]
// that wraps the tool's error (errors.As finds both). The call is then
// unanswered in the state: [Runner.Resume] runs it again under the same
// call ID, so the same [ToolCall.IdempotencyKey], without asking the
// model again. Arguments that do not decode are an [*ArgumentError],
// reported to the model or ending the run as [WithInvalidCallsToModel]
// says.
//
// Every call carries an idempotency key, the run ID and the call ID
// ([ToolCall.IdempotencyKey]); a tool with external effects passes it on
// to the service it calls (a [Tool] reads it from its [*ToolCall], a
// tool.Func's func from tool.CallFromContext). Across a crash the key
// stays the same only if the checkpoint held the response that asked for
// the call: middleware/checkpoint saves it before the first call runs.
//
// # Structured output
//
// An agent may declare the Go type of its final output ([Agent.Output], an
// [OutputType]; package tool builds one from a type with the schema
// generation of its typed tools). The model stage gets its schema
// ([ModelCall].Output), and the core decodes the final output (a final
// message, or a terminal tool's output) when the turn decides, so the turn's
// [NextStep].Value holds it before the output guardrails run. [OutputAs]
// reads it from a [Result], [DecodeOutput] from a finished state. Text that
// does not decode is an [*OutputError], a refusal a [*RefusalError]; both
// end the run unfinished. The state keeps only the raw text, so a checkpoint
// gives the same value in any process.
// Optional fields (a nullable pointer the model still sends in strict
// mode) and the schema's default name are described by package tool.
//
// # Handoffs
//
// A [Handoff] makes a function transfer_to_<agent> that the model calls to
// hand the conversation over. With [Handoff.Input] (package tool builds one,
// or a whole typed handoff with tool.Handoff) the call carries arguments
// that are validated and decoded before anything of the turn runs, like a
// tool's; [Handoff.OnHandoff] gets the value before the target runs. A
// response holding both a final message and a handoff call hands off, and
// the message is the handing-off agent's answer: validated against its
// output type before the handoff is taken, its value (or its
// [*OutputError], which does not stop the handoff) given to OnHandoff and
// recorded (see [Handoff] for the full rule).
// Every handoff taken is recorded in the run's state: [Handoffs] lists
// them, [HandoffInputAs] and [HandoffOutputAs] decode their input and the
// answer beside them, from a live result's state or a checkpoint alike.
// The answer beside a handoff is not a final output: output guardrails do
// not check it, and [OutputAs] returns the last agent's final output.
//
// # Policies
//
// Around the model and the tools, options of the runner and of the tools
// set what production runs need; none costs anything measurable until it
// is configured (bench's BenchmarkPolicies has the figures):
//
//   - Retries and fallback are middleware on the model stage
//     (middleware/retry, in the Extra place of a [Stack]), built on
//     [ModelCall.Attempt]: each attempt is a call of its own, traced
//     apart, and [ModelError].RetryAfter carries the server's wait.
//   - Tool timeouts: [WithToolTimeout], or a [TimeoutTool]'s own limit
//     (tool.WithTimeout), gives a call's context a deadline; a call past
//     it is a [*ToolTimeoutError], the call's output unless the runner
//     aborts on tool errors or on timeouts ([WithToolTimeoutsAbort]).
//   - A forced tool choice ("required", or a tool's name) goes back to
//     "auto" once the agent made a call, for the rest of the run, so it
//     cannot loop until the turn limit; [WithToolChoiceKept] keeps it.
//   - A [Condition] enables a tool ([ConditionalTool]: tool.WithEnabled,
//     an MCP server's Enabled) or a handoff ([Handoff].Enabled) per turn,
//     or per run; a disabled one is not offered, and a call to it is
//     answered with a [*ToolDisabledError].
//   - A [Budget] ([WithBudget]) limits a run's input tokens, output tokens
//     or cost (with a price table); a run that reaches it ends with a
//     [*BudgetError] whose state resumes on a larger budget.
//
// # Cost
//
// The chain is built once, in [NewRunner]. A turn's work is O(its new
// items): the model input is an O(1) view of the history, never a copy.
package pipeline
