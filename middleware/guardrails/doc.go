// Package guardrails provides middleware that checks a run's input, its
// final output and its tool calls, and stops the run with a
// [*TripwireError] when a check trips.
//
//	noSecrets := func(ctx context.Context, a *pipeline.Agent, out string) (guardrails.Verdict, error) {
//		if strings.Contains(out, "sk-") {
//			return guardrails.Trip("api key in output"), nil
//		}
//		return guardrails.Verdict{}, nil
//	}
//	runner := pipeline.NewRunner(pipeline.WithMiddleware(
//		persistence.Middleware(store),
//		approval.Require(approval.ByTool("delete_file")),
//		guardrails.Input(classify, guardrails.WithParallel()),
//		guardrails.Output(noSecrets, guardrails.WithName("no_secrets")),
//	))
//	_, err := runner.Run(ctx, agent, pipeline.UserInput("hello"))
//	if errors.Is(err, guardrails.ErrTripwire) { ... }
//
// # Kinds
//
// Each kind gets what it guards, with the agent that serves the turn:
//
//   - [Input] checks the run's input (a Check[[]state.Item]) on the first
//     turn of a run, never again (not on later turns, not on resume),
//     blocking before the model call or, with [WithParallel], beside it.
//     With [WithHistory] it sees the history the model will see before
//     the input, too.
//   - [Output] checks the final output (a Check[string]) of the turn that
//     ends the run, whichever agent serves it: a final message or a
//     terminal tool's output. Non-final turns are not checked. [Typed]
//     adapts a check of a structured output: it gets the value decoded
//     into the agent's output type as well as the text.
//   - [ToolInput] checks a call (a Check[*pipeline.ToolCall]) before the
//     tool runs: allow, reject with a message, or trip.
//   - [ToolOutput] checks a completed call and its result (a
//     Check[pipeline.ToolOutcome]): allow, replace the output, or trip.
//
// Guardrails compose: add several middleware, or several checks to one
// with [WithCheck]. The checks of one guardrail run concurrently, and the
// first that trips (or fails) cancels the others; a tripwire outranks an
// error. A check that returns an error does not trip: the run ends with a
// [*CheckError] (errors.Is(err, [ErrCheck])).
//
// # Results
//
// Every check that reaches a verdict records a [state.GuardrailResult] in
// the run's state (name, stage, turn, tripped, behavior and message for
// tool guardrails, info as JSON, call ID for tool guardrails), in check
// order, before the guardrail returns: so before anything later in the
// turn that could fail, such as a session append. Results travel with the
// state through state.Marshal and state.Unmarshal, and each is recorded
// once: a guardrail runs when its stage runs, and the runner never runs a
// stage twice for the same thing (a resumed run does not redo its first
// turn, and a call whose output the run holds does not reach the tool stage
// again; persistence answers a call whose output the session already holds
// without running it), so nothing re-adds an old result. Only a call that
// truly runs again (the process died after the tool ran but before the
// turn recorded or committed its output) is checked, and counted, again.
//
// A nested run (an agent used as a tool, [pipeline.AgentTool]) records its
// results in its own state, and the core copies them into the outer run's
// as the call returns, tagged with Owner (the outer call ID) and Agent
// (the nested agent), each once across pause and resume; in both failure
// modes the outer state, its checkpoint and [pipeline.StateOf] of the
// outer error report them.
//
// A tripwire error carries a deep copy of the state at the moment it
// tripped (the items so far and every result), and the run's
// [pipeline.Result] holds the live state. A run stopped by a tripwire
// stays stopped: resuming it returns the same [*TripwireError]. That holds
// for an outer run aborted ([pipeline.WithToolErrorsAbort]) by a nested
// run's tripwire; an outer run that reported the nested failure to its
// model (the default) was not stopped, and resumes.
//
// A middleware outside the guardrails (persistence, logging, tracing)
// learns a turn's verdict from the error without importing this package:
// an input tripwire matches [pipeline.ErrInputRejected], an output tripwire
// [pipeline.ErrOutputRejected], a check error [pipeline.ErrGuardrailFailed]
// (errors.Is), and errors.As into an interface{ GuardrailResult()
// state.GuardrailResult } yields the tripped result. The state tells it
// too: a tripped result of the turn is recorded before the error returns.
//
// # Ordering
//
// Put guardrails inside approval, which sits inside persistence:
// tracing → logging → persistence → checkpoint → approval → guardrails →
// core ([pipeline.Stack] builds it).
//
//   - Persistence sits outside the guardrails, so it sees the output
//     verdict before it commits the final turn's model output (a tripwire
//     discards it), and it stores what the tool guardrails made of a call: a
//     rejection message or a replaced output, never the raw one.
//   - Approval sits outside the tool guardrails, so a pending or rejected
//     call never reaches them nor the tool, and a tool guardrail runs once
//     per call, when the call executes (on resume, for an approved call).
//
// # Tool guardrails and approval
//
// To check calls before a human is asked, add a second tool input guardrail
// with [BeforeApproval] outside approval, usually with the same check:
//
//	guardrails.ToolInput(check, guardrails.BeforeApproval()), // named "tool_input_before_approval"
//	approval.Require(policy),
//	guardrails.ToolInput(check),                               // named "tool_input"
//
// They are two guardrails and count as two: each records one result per
// call it checks. The outer one checks every call once, on the turn the
// model made it (not again on resume); a rejection there answers the call
// without asking anyone, and a tripwire stops the run before any approval
// is requested. The inner one checks every call that runs, when it runs.
// So a call that needed approval and was approved has two tool_input
// results (one per name, on the turn it was made and the turn it ran), a
// call that needed none has two on the same turn, and a call the human
// rejected has only the pre-approval one.
//
// # A blocked input and the session
//
// By default the session middleware stores a run's input at the start of
// its first turn, before the model is called, so a blocked input is in the
// session and the next run of the session sends it to the model again.
// [DropBlockedInput] keeps it out: the checks run before the run places
// its input, and a blocked input is never placed, so neither the run's
// state, nor its checkpoints, nor its session hold it, and the next
// message's history lacks it. [RedactBlockedInput] places the form a func
// makes of it instead (a card number masked). With [WithHistory] the
// checks run on the first turn, after the input was placed in the state;
// the session then stores the input only once the checks passed (still
// before any tool commits) and never stores a blocked one, and the ruling
// takes a blocked input out of the run's state again before anything
// saves it, so no checkpoint holds it either.
//
// # Streaming
//
// Streamed and plain runs go through the same stages, so they record the
// same results and return the same errors. Text deltas reach a streaming
// consumer before the output guardrails ran (and, with [WithParallel],
// before the input guardrails finished); the state, the session and the
// result still obey the verdict. A streamed run also yields a
// [pipeline.GuardrailChecked] event for each verdict as it is recorded,
// the tripping one before the error that ends the run.
package guardrails
