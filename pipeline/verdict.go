package pipeline

import "errors"

// Guardrail verdicts that middleware outside the guardrails acts on. The
// guardrail middleware's errors match them with errors.Is (its tripwire
// error reports the stage it tripped at), so persistence, logging and
// tracing can tell a verdict from a failure without importing the
// guardrails package.
var (
	// ErrInputRejected means an input guardrail tripped: the run's input
	// was refused. The input stays in the session; no model output is
	// stored.
	ErrInputRejected = errors.New("pipeline: input rejected by a guardrail")
	// ErrOutputRejected means an output guardrail tripped: the turn's model
	// output (its messages, a terminal tool's output) must not be kept.
	ErrOutputRejected = errors.New("pipeline: output rejected by a guardrail")
	// ErrGuardrailFailed means a guardrail could not reach a verdict (its
	// check returned an error). It is not a tripwire: the turn's items are
	// kept and the error ends the run.
	ErrGuardrailFailed = errors.New("pipeline: guardrail failed")
)
