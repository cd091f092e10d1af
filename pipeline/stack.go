package pipeline

// A Stack names the middleware of the recommended chain by their place in
// it, so that the order is written once, here, and a program fills the
// places it uses:
//
//	tracing → logging → persistence → checkpoint → approval → guardrails → extra → core
//
// The order carries meaning:
//
//   - tracing and logging are outermost, so the spans and log lines cover
//     everything inside, the saves and appends included;
//   - persistence sits outside the checkpointer, the approval and the
//     guardrails: it sees their verdicts before it commits a final turn's
//     model output, and stores what they made of a tool call (a rejection,
//     a guardrail's replacement output);
//   - the checkpointer sits inside persistence, whose session store it
//     wraps, so every append is preceded by a save, and outside approval
//     and the guardrails, so their verdicts are in the run before it is
//     saved. A checkpointer made with checkpoint.WithSession brings its
//     persistence with it: its middleware goes in Checkpoint and
//     Persistence stays empty;
//   - approval sits outside the guardrails on the tool stage, so a pending
//     or rejected call never reaches a tool guardrail nor the tool, and a
//     tool guardrail runs once, when the call executes. A program that
//     wants a tool check before approval puts a second guardrail in Extra
//     of an outer Stack, or composes by hand.
//
// Model-stage policies that make a model call more than once, such as
// middleware/retry's retries and fallback, go in Extra: then the stages
// outside see one model call, and tracing records each attempt.
//
// A place left empty (the zero Middleware) is skipped.
type Stack struct {
	Tracing     Middleware
	Logging     Middleware
	Persistence Middleware
	Checkpoint  Middleware
	Approval    Middleware
	Guardrails  []Middleware // in the order given: input, output, tool guardrails
	Extra       []Middleware // innermost, around the core
}

// Middleware returns the stack's middleware in the recommended order, for
// [WithMiddleware] or [Chain].
func (s Stack) Middleware() []Middleware {
	out := make([]Middleware, 0, 5+len(s.Guardrails)+len(s.Extra))
	for _, m := range []Middleware{s.Tracing, s.Logging, s.Persistence, s.Checkpoint, s.Approval} {
		if !m.isZero() {
			out = append(out, m)
		}
	}
	for _, m := range append(s.Guardrails[:len(s.Guardrails):len(s.Guardrails)], s.Extra...) {
		if !m.isZero() {
			out = append(out, m)
		}
	}
	return out
}

// isZero reports whether m is the zero Middleware: no name and no stage.
func (m Middleware) isZero() bool {
	return m.Name == "" && m.Run == nil && m.Turn == nil && m.Model == nil && m.Tool == nil
}
