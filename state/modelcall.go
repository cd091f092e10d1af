package state

import (
	"reflect"
	"slices"

	"github.com/turnkit/turnkit/internal/jsonscan"
	"github.com/turnkit/turnkit/internal/jsonw"
	"github.com/turnkit/turnkit/state/internal/wire"
)

// A ModelCall is what a run records of one model call: where it was made
// and what it cost. The run keeps one per call, in call order
// ([Run.ModelCalls]), beside the totals of [Run.Usage]; a checkpoint save
// writes each once, as a piece of its own ([Delta]), so a save's size does
// not grow with the number of calls made before it.
type ModelCall struct {
	Turn       int    `json:"turn"`
	Agent      string `json:"agent"`
	Model      string `json:"model,omitempty"`       // the model the call named, "" for the agent's default
	ResponseID string `json:"response_id,omitempty"` // the provider's ID of the response
	// Seq is the position of the response's first item in the run (0 when
	// the response placed none), so a timeline can show the call there.
	Seq   int64 `json:"seq,omitempty"`
	Usage Usage `json:"usage"`
}

// ModelCalls returns a copy of the model calls the run recorded, in call
// order. A run decoded from a checkpoint written before they were
// recorded has none.
func (r *Run) ModelCalls() []ModelCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// addModelCall records a model call.
func (r *Run) addModelCall(c ModelCall) {
	r.mu.Lock()
	r.calls = append(withCallRoom(r.calls), c)
	r.mu.Unlock()
}

// callSeqBase is where the positions of model call pieces start: the
// n-th call recorded is the piece at callSeqBase-n, below every
// guardrail result's (-n), so the two never meet.
const callSeqBase = -(int64(1) << 40)

// checkCalls checks the recorded model calls.
func (r *Run) checkCalls() error {
	for i, c := range r.calls {
		if c.Turn < 0 || c.Seq < 0 || c.Seq >= max(r.nextSeq, 1) { // the path built only here: no allocation per call
			return invalid(elemPath("model_calls", i), "turn %d or position %d is out of range (next_seq %d)", c.Turn, c.Seq, r.nextSeq)
		}
		if err := c.Usage.check(); err != nil {
			return err
		}
	}
	return nil
}

// modelCallFields are the members of a model call.
var modelCallFields = wire.FieldsOf(reflect.TypeFor[ModelCall]())

// appendModelCall appends json.Marshal(c)'s bytes.
func appendModelCall(b []byte, c *ModelCall) []byte {
	b = append(b, `{"turn":`...)
	b = jsonw.AppendInt(b, int64(c.Turn))
	b = append(b, `,"agent":`...)
	b = appendString(b, c.Agent)
	if c.Model != "" {
		b = append(b, `,"model":`...)
		b = appendString(b, c.Model)
	}
	if c.ResponseID != "" {
		b = append(b, `,"response_id":`...)
		b = appendString(b, c.ResponseID)
	}
	if c.Seq != 0 {
		b = append(b, `,"seq":`...)
		b = jsonw.AppendInt(b, c.Seq)
	}
	b = append(b, `,"usage":`...)
	m := c.Usage.members()
	b = appendInts(b, m[:], usageFields)
	return append(b, '}')
}

// modelCallSize bounds the length of c's JSON but for the longest
// integers: its members' names, the usage's and c's strings.
func modelCallSize(c *ModelCall) int {
	return 176 + len(c.Agent) + len(c.Model) + len(c.ResponseID)
}

// appendModelCalls appends json.Marshal(calls)'s bytes.
func appendModelCalls(b []byte, calls []ModelCall) []byte {
	if calls == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range calls {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendModelCall(b, &calls[i])
	}
	return append(b, ']')
}

// minModelCallLen is less than the length of a model call Marshal writes
// ({"turn":0,"agent":"","usage":{...}} with the usage's five members):
// the input left to read bounds the list's room by it. Shorter calls only
// grow the list.
const minModelCallLen = 64

// modelCalls reads a null or a list of model calls into *p as
// encoding/json decodes it (an empty list leaves *p nil). Anything else
// (an element that is not an object, an unknown or repeated member) gives
// up.
func (d *fastDec) modelCalls(s *jsonscan.Scanner, p *[]ModelCall) bool {
	if s.Null() {
		return true
	}
	// The list made once, not grown call by call: a run makes a call a
	// turn, and more only when a turn's call is retried or a turn hands
	// off (then the list grows); and with room for the call a resume
	// makes first (resumeCallsRoom). Counting the calls first, on a copy of
	// the scanner, scanned the list twice: more than half the time of
	// decoding a paused run's one call.
	var out []ModelCall
	if n := d.w.Turn; n > 0 {
		out = make([]ModelCall, 0, min(n, (len(s.B)-s.I)/minModelCallLen)+resumeCallsRoom)
	}
	l := s.Array()
	for l.Next(s) {
		out = append(out, ModelCall{})
		if !d.modelCall(s, &out[len(out)-1]) { // decoded in place: no copy of its own escapes
			return false
		}
	}
	*p = out
	return l.Done()
}

// The members of a [ModelCall], for a switch on a member's position (see
// approvalMembers).
const (
	callTurn = iota
	callAgent
	callModel
	callResponseID
	callSeq
	callUsage
)

var modelCallMembers = memberIDs(modelCallFields, []string{
	callTurn: "Turn", callAgent: "Agent", callModel: "Model", callResponseID: "ResponseID", callSeq: "Seq", callUsage: "Usage",
})

// modelCall reads a model call's object into *c.
func (d *fastDec) modelCall(s *jsonscan.Scanner, c *ModelCall) bool {
	var seen wire.FieldSet
	o := modelCallFields.Object(s)
	for o.Next(s) {
		f := o.Field
		if f < 0 || !seen.First(f) {
			return false
		}
		var ok bool
		switch modelCallMembers[f] {
		case callTurn:
			ok = wire.OptInt(s, &c.Turn)
		case callAgent: // interned: the run's calls share their agents' names
			ok = d.optName(s, &c.Agent)
		case callModel:
			ok = d.optString(s, &c.Model)
		case callResponseID: // one of its own per call: kept in the shared chunks, not interned
			ok = d.optKept(s, &c.ResponseID)
		case callSeq:
			ok = wire.OptInt64(s, &c.Seq)
		case callUsage:
			m := c.Usage.members()
			ok = ints(s, m[:], usageFields)
		}
		if !ok {
			return false // or a member added to ModelCall and not here
		}
	}
	return o.Done()
}
