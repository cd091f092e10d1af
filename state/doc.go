// Package state holds the durable state of an agent run: its items with
// their positions, the current agent and turn, usage, pending approvals and
// the decisions on them, guardrail results, and the bookkeeping persistence
// and tracing keep across a pause.
//
// It imports no other turnkit package: everything else builds on it.
//
// # Items and positions
//
// An [Item] is an immutable value. Each gets its position (Seq) once, when
// the run records it: the items of a model response in the order the model
// produced them, then the outputs of its calls in call order. Positions are
// reserved before the calls run, so an output decided later (after an
// approval) still lands at its original position.
//
// # Copies
//
// Accessors return copies or O(1) immutable views ([Items]); a caller never
// holds anything that aliases a [Run].
package state
