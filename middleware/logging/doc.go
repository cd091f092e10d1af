// Package logging is turnkit's zap logging middleware: structured events
// at the run, turn, model call, tool call, guardrail and approval points,
// with typed fields.
//
//	runner := pipeline.NewRunner(pipeline.WithMiddleware(
//		tracing.Middleware(),
//		logging.Middleware(logger),
//		// persistence, approval, guardrails ...
//	))
//
// # Events
//
// Every event carries run_id; turn events add turn and agent; tool events
// add tool, call_id and status; timed events add duration; model and run
// events add input_tokens and output_tokens.
//
//	level  message              when
//	debug  run started          a run or resumption begins
//	debug  model call           the model stage returned
//	debug  tool call            the tool stage returned for a call
//	debug  turn finished        a turn decided its next step
//	debug  guardrail passed     a guardrail let its subject through
//	info   run finished         outcome final_output, interrupted or error
//	info   handoff              from and to
//	info   approval requested   a call waits for a decision
//	info   approval decision    a call ran or was rejected under a decision
//	warn   guardrail tripped    a tripwire
//	warn   tool failed          a tool's error went back to the model as its output
//	warn   turn failed          by a guardrail's verdict or cancellation
//	error  turn failed          any other error
//	error  run failed           an error no turn returned (the turn limit)
//
// A turn's error is logged once, by "turn failed", and returned unchanged.
// Guardrail verdicts and approvals are read from the run's state, which the
// guardrail and approval middleware write to, so this package depends on
// neither.
//
// # Payloads
//
// Tool arguments and outputs, the model's output, guardrail messages and
// info, and decision messages can hold personal or secret data; they are
// logged only with [WithPayloads].
//
// # Cost
//
// Events go through zap's Logger.Check, so the fields of an event the
// logger's level disables are never built; with zap.NewNop the middleware
// costs a context value per run and a few clock readings per turn (see
// BenchmarkTurn).
package logging
