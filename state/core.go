package state

import (
	"encoding/json"

	"github.com/turnkit/turnkit/internal/key"
)

// Core returns the operations on a run that only turnkit's own packages
// may use: those that move a run's positions, boundaries, turn, agent and
// outcome (the pipeline core's), and its checkpoint and session
// bookkeeping (the stores' and persistence's). They are methods of Run
// unexported here, so that a middleware holding a *Run can read it and
// annotate it (guardrail results, extensions, decisions) but can neither
// move its positions nor fake its bookkeeping.
//
// Package internal/runcore is their one door: it calls Core once, with a
// key made by package internal/key, which no package outside this
// module can import. Core panics on any other key (the zero one, which
// generic code can make without naming the type).
func Core(k key.Key) core {
	if !k.Valid() {
		panic("state: Core opens only to internal/runcore's key")
	}
	return core{}
}

// core carries the guarded operations; its methods are typed, so a change
// of signature on either side fails to compile.
type core struct{}

func (core) Place(r *Run, items []Item, calls int) (Boundary, error) { return r.place(items, calls) }
func (core) Reserve(r *Run, n int) int64                             { return r.reserve(n) }
func (core) PlaceModelResponse(r *Run, items []Item, calls int, u Usage, c ModelCall) (Boundary, error) {
	return r.placeModelResponse(items, calls, u, c)
}
func (core) ModelInputAnd(r *Run, key string) (Items, json.RawMessage, bool) {
	return r.modelInputAnd(key)
}
func (core) RecordOutput(r *Run, it Item) (bool, error) { return r.recordOutput(it) }
func (core) NextTurn(r *Run, limit int) (int, bool)     { return r.nextTurn(limit) }
func (core) Record(r *Run, it Item) error               { return r.record(it) }
func (core) RecordAll(r *Run, items []Item) error       { return r.record(items...) }
func (core) SetResponse(r *Run, b Boundary)             { r.setResponse(b) }
func (core) AddInput(r *Run, items ...Item) []Item      { return r.addInput(items...) }
func (core) SetTurn(r *Run, n int)                      { r.setTurn(n) }
func (core) SetMaxTurns(r *Run, n int)                  { r.setMaxTurns(n) }
func (core) SetAgent(r *Run, name string)               { r.setAgent(name) }
func (core) Finish(r *Run, output string)               { r.finish(output) }
func (core) Unfinish(r *Run)                            { r.unfinish() }
func (core) AddUsage(r *Run, u Usage)                   { r.addUsage(u) }
func (core) AddModelCall(r *Run, c ModelCall)           { r.addModelCall(c) }
func (core) AddPending(r *Run, a Approval)              { r.addPending(a) }
func (core) ResolvePending(r *Run, callID string)       { r.resolvePending(callID) }
func (core) PendingView(r *Run) []Approval              { return r.pendingView() }
func (core) ResolveOwned(r *Run, owner string)          { r.resolveOwned(owner) }
func (core) AddDecision(r *Run, d Decision)             { r.addDecision(d) }
func (core) ReplaceContext(r *Run, items []Item)        { r.replaceContext(items) }
func (core) WithholdInput(r *Run, stored []Item) error  { return r.withholdInput(stored) }
func (core) SetVersion(r *Run, v int64)                 { r.setVersion(v) }
func (core) Saved(r *Run, d *Delta)                     { r.saved(d) }
func (core) SetSessionID(r *Run, id string)             { r.setSessionID(id) }
func (core) SetSessionWatermark(r *Run, w int64)        { r.setSessionWatermark(w) }
func (core) SetHistory(r *Run, items []Item) error      { return r.setHistory(items) }
func (core) SetSessionHistory(r *Run, items []Item, stamp int64) error {
	return r.setSessionHistory(items, stamp)
}
func (core) AddNestedGuardrails(r *Run, owner, agent string, gs []GuardrailResult) {
	r.addNestedGuards(owner, agent, gs)
}
