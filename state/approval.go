package state

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"sync"
)

// An Approval is a tool call waiting for a human decision: the run paused
// before running it. Approvals handed out are copies.
type Approval struct {
	Tool      string `json:"tool"`
	CallID    string `json:"call_id"`
	Arguments string `json:"arguments"`
	Agent     string `json:"agent"`
	// Seq is the position of the call item; OutputSeq the position reserved
	// for its output.
	Seq       int64 `json:"seq"`
	OutputSeq int64 `json:"output_seq"`
	// Owner names the nested run that owns the call when an agent used as a
	// tool paused ("" for the run itself).
	Owner string `json:"owner,omitempty"`
	// Elicitation, when set, is the MCP server's request for input the
	// call waits for (see [Run.AnswerElicitation]): the call is not held
	// for an approval but for an answer.
	Elicitation Elicitation `json:"elicitation,omitzero"`
}

// Fingerprint returns the fingerprint a decision on this call binds to.
func (a Approval) Fingerprint() string { return Fingerprint(a.Tool, a.Arguments) }

// Fingerprint returns a stable digest of a tool name and its arguments.
// A decision records it; a call whose arguments changed after the decision
// no longer matches.
func Fingerprint(tool, arguments string) string {
	out := fingerprint(tool, arguments)
	return string(out[:])
}

// fingerprint returns the hex of [Fingerprint] in an array: for arguments
// up to the buffer's size, the digest's input and its hex on the stack.
func fingerprint(tool, arguments string) [2 * sha256.Size]byte {
	var buf [512]byte
	in := append(append(append(buf[:0], tool...), 0), arguments...)
	sum := sha256.Sum256(in)
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum[:])
	return out
}

// A Verdict is a human decision on a tool call. The zero Verdict is invalid.
type Verdict uint8

// The verdicts.
const (
	Approved Verdict = iota + 1
	Rejected
)

// String returns "approved" or "rejected".
func (v Verdict) String() string {
	switch v {
	case Approved:
		return "approved"
	case Rejected:
		return "rejected"
	}
	return "Verdict(invalid)"
}

// MarshalText writes the verdict's name.
func (v Verdict) MarshalText() ([]byte, error) {
	if v != Approved && v != Rejected {
		return nil, errInvalidVerdict
	}
	return []byte(v.String()), nil
}

// UnmarshalText reads a verdict's name.
func (v *Verdict) UnmarshalText(b []byte) error {
	switch string(b) {
	case "approved":
		*v = Approved
	case "rejected":
		*v = Rejected
	default:
		return errInvalidVerdict
	}
	return nil
}

// A Decision records a verdict. An exact decision names a call ID and binds
// to the fingerprint of the arguments it saw; an "always" decision (CallID
// empty, Always set) applies to every call of the tool. An exact decision
// beats an "always" one.
type Decision struct {
	Tool        string  `json:"tool"`
	CallID      string  `json:"call_id,omitempty"`
	Fingerprint string  `json:"fingerprint,omitempty"`
	Verdict     Verdict `json:"verdict"`
	Always      bool    `json:"always,omitempty"`
	Message     string  `json:"message,omitempty"`
	// Owner repeats the owner of a nested call's approval (see
	// [Approval.Owner]).
	Owner string `json:"owner,omitempty"`
	// Answer, when set, makes the decision an answer to an elicitation
	// (see [Run.AnswerElicitation]) rather than an approval; its Verdict
	// is then Approved for an accepted request and Rejected otherwise.
	Answer ElicitationAnswer `json:"answer,omitzero"`
}

// Pending returns copies of the approvals the run is waiting for, in call
// order.
func (r *Run) Pending() []Approval {
	r.mu.Lock()
	defer r.mu.Unlock()
	return clonePending(r.pending)
}

// addPending records that a call waits for a decision. Recording the same
// call ID again replaces the earlier record.
//
// The list is copy-on-write: it is never changed in place, only replaced
// (or appended to past its length), so that [Run.Clone], a checkpoint's
// snapshot and a result's interruptions share it capped at its length
// instead of copying it.
func (r *Run) addPending(a Approval) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := slices.Clip(r.pending) // the append below makes a new array
	if i := slices.IndexFunc(p, func(x Approval) bool { return x.CallID == a.CallID }); i >= 0 {
		p = slices.Clone(p)
		p[i] = a
		r.pending = p
		return
	}
	p = append(p, a)
	slices.SortFunc(p, func(x, y Approval) int { return cmp.Compare(x.Seq, y.Seq) })
	r.pending = p
}

// resolvePending removes the call from the pending approvals, once it ran or
// was rejected.
func (r *Run) resolvePending(callID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = withoutPending(r.pending, func(a Approval) bool { return a.CallID == callID })
}

// withoutPending returns the pending approvals p without those del
// matches: p itself when there are none, nil when all match, the rest of
// p, shared and capped at its length, when the matches are its first or
// last ones (as a resume resolves them, call by call), else a new list.
// Sharing is safe because p is copy-on-write (see addPending).
func withoutPending(p []Approval, del func(Approval) bool) []Approval {
	i := slices.IndexFunc(p, del)
	if i < 0 {
		return p
	}
	j := i + 1
	for j < len(p) && del(p[j]) {
		j++
	}
	if slices.ContainsFunc(p[j:], del) { // the matches are not one run
		return slices.DeleteFunc(slices.Clone(p), del)
	}
	switch {
	case i == 0 && j == len(p):
		return nil
	case i == 0:
		return p[j:len(p):len(p)]
	case j == len(p):
		return p[:i:i]
	}
	return slices.DeleteFunc(slices.Clone(p), del)
}

// pendingView returns the pending approvals, shared and capped at their
// length: the list is copy-on-write (see addPending), so the view never
// changes. Callers must not change its elements.
func (r *Run) pendingView() []Approval {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clip(r.pending)
}

// Decisions returns copies of the recorded decisions, in the order made.
func (r *Run) Decisions() []Decision {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.decisions)
}

// addDecision records a decision as given, under the rules the deciding
// methods keep: the first exact decision on a call stands, so a later one
// for the same tool and call ID is dropped; an "always" decision replaces
// the tool's earlier one. The approval package's methods check a decision
// before recording it; this is the raw write they use.
func (r *Run) addDecision(d Decision) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case d.Always:
		r.decisions = slices.DeleteFunc(r.decisions, func(x Decision) bool { return x.Always && x.Tool == d.Tool })
	case d.IsAnswer():
		if r.answerLocked(d.Tool, d.CallID, d.Answer.Request) >= 0 {
			return
		}
	case r.exactLocked(d.Tool, d.CallID) >= 0:
		return
	}
	r.decisions = append(r.decisions, d)
}

// DecisionFor returns the decision that governs a call: the first exact
// decision for its tool and call ID (a decision once made on a call binds;
// see [Run.Approve]), or else the tool's "always" decision (the latest, if
// a checkpoint's decision history holds several). exact reports which one
// it is; the caller checks the fingerprint (see [Decision.Check]).
func (r *Run) DecisionFor(tool, callID string) (d Decision, exact, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := r.exactLocked(tool, callID); i >= 0 {
		return r.decisions[i], true, true
	}
	for i := len(r.decisions) - 1; i >= 0; i-- {
		if x := r.decisions[i]; x.Always && x.Tool == tool {
			return x, false, true
		}
	}
	return Decision{}, false, false
}

// exactLocked returns the index of the first exact decision on the call
// that is an approval (not an answer to an elicitation), or -1.
func (r *Run) exactLocked(tool, callID string) int {
	if callID == "" {
		return -1
	}
	return slices.IndexFunc(r.decisions, func(x Decision) bool {
		return !x.Always && !x.IsAnswer() && x.CallID == callID && x.Tool == tool
	})
}

func clonePending(p []Approval) []Approval { return slices.Clone(p) }

// IsPending reports whether the call waits for a decision.
func (r *Run) IsPending(callID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.pending {
		if a.CallID == callID {
			return true
		}
	}
	return false
}

// Approve approves the pending call callID: the next resume runs it. The
// decision binds to the call's tool and the fingerprint of the arguments it
// has now. A call ID with no pending approval fails with a
// [*DecisionError] wrapping [ErrUnknownCall], and a call already decided
// (pending still, or run or rejected since) with one wrapping
// [ErrAlreadyDecided] and [ErrConflict]: the first decision on a call
// stands, here, in [Run.DecisionFor] and the core's own recording, and a
// checkpoint holding a contradicting second one is refused by
// [Unmarshal]. So of two processes deciding one call of a stored
// checkpoint at once, the second fails with an error matching
// [ErrConflict], here or, if it loaded the checkpoint before the first
// saved, when it saves. A failed call changes nothing.
func (r *Run) Approve(callID string) error { return r.decide(callID, Approved, "") }

// Reject rejects the pending call callID: the next resume does not run it
// and answers the model with message (the approval middleware's default
// text if empty). Errors are those of [Run.Approve].
func (r *Run) Reject(callID, message string) error { return r.decide(callID, Rejected, message) }

// ApproveAlways approves every call of the named tool, pending now or made
// later in the run, that has no exact decision of its own. It fails only
// for an empty tool name.
func (r *Run) ApproveAlways(tool string) error { return r.decideAlways(tool, Approved, "") }

// RejectAlways rejects every call of the named tool that has no exact
// decision of its own, answering the model with message. It fails only for
// an empty tool name.
func (r *Run) RejectAlways(tool, message string) error {
	return r.decideAlways(tool, Rejected, message)
}

func (r *Run) decide(callID string, v Verdict, message string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.IndexFunc(r.pending, func(a Approval) bool { return a.CallID == callID })
	if i < 0 {
		if d := slices.IndexFunc(r.decisions, func(x Decision) bool { return !x.Always && !x.IsAnswer() && x.CallID == callID }); d >= 0 {
			// Decided, and the resume that ran (or rejected) it went on.
			return &DecisionError{RunID: r.id, CallID: callID, Tool: r.decisions[d].Tool, Err: ErrAlreadyDecided}
		}
		return &DecisionError{RunID: r.id, CallID: callID, Err: ErrUnknownCall}
	}
	a := r.pending[i]
	if a.IsElicitation() {
		return &DecisionError{RunID: r.id, CallID: callID, Tool: a.Tool, Err: ErrNotElicitation}
	}
	if r.exactLocked(a.Tool, callID) >= 0 {
		return &DecisionError{RunID: r.id, CallID: callID, Tool: a.Tool, Err: ErrAlreadyDecided}
	}
	fp := a.Fingerprint()
	vouched.add(fp, a.Tool, a.Arguments)
	r.decisions = append(r.decisions, Decision{
		Tool: a.Tool, CallID: callID, Fingerprint: fp, Verdict: v, Message: message, Owner: a.Owner,
	})
	return nil
}

// vouched remembers the fingerprints of the last few exact decisions made
// in this process with the tool and arguments they were computed from, so
// that the check of such a decision when its call runs (commonly in the
// same process, right after the resume) does not hash the arguments again:
// two hashes of the arguments were 6% of the instructions of an approval
// cycle (see BenchmarkApproval). An entry is exactly a fingerprint
// computed; a check takes its entry out, and the oldest entry gives way to
// a new one, so that it keeps at most len(entries) arguments alive.
var vouched fingerprints

// fingerprints is a small memo of computed fingerprints (see vouched).
type fingerprints struct {
	mu      sync.Mutex
	next    int
	entries [8]fingerprintOf
}

// fingerprintOf is a fingerprint with what it was computed from.
type fingerprintOf struct{ fp, tool, arguments string }

// add remembers that fp is the fingerprint of tool and arguments.
func (m *fingerprints) add(fp, tool, arguments string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries[m.next] = fingerprintOf{fp, tool, arguments}
	m.next = (m.next + 1) % len(m.entries)
}

// take reports whether fp is remembered as the fingerprint of tool and
// arguments, and forgets it if so.
func (m *fingerprints) take(fp, tool, arguments string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.entries {
		if e := &m.entries[i]; e.fp == fp && fp != "" && e.tool == tool && e.arguments == arguments {
			*e = fingerprintOf{}
			return true
		}
	}
	return false
}

func (r *Run) decideAlways(tool string, v Verdict, message string) error {
	if tool == "" {
		return &DecisionError{RunID: r.id, Err: errors.New("empty tool name")}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.decisions = slices.DeleteFunc(r.decisions, func(d Decision) bool { return d.Always && d.Tool == tool })
	r.decisions = append(r.decisions, Decision{Tool: tool, Verdict: v, Always: true, Message: message})
	return nil
}

// Check reports whether the decision still applies to a call of tool with
// the given arguments: an exact decision must have been made on the same
// arguments, or it fails with a [*FingerprintError] wrapping
// [ErrArgumentsChanged]. An "always" decision applies to any arguments.
func (d Decision) Check(callID, tool, arguments string) error {
	if d.Always || d.Fingerprint == "" || vouched.take(d.Fingerprint, tool, arguments) {
		return nil
	}
	if got := fingerprint(tool, arguments); string(got[:]) != d.Fingerprint { // compared without a string of its own
		return &FingerprintError{CallID: callID, Tool: tool, Decided: d.Fingerprint, Got: string(got[:])}
	}
	return nil
}

// PendingOwnedBy returns copies of the pending approvals of calls in the
// nested run that owner (a call ID) stands for, and deeper ones.
func (r *Run) PendingOwnedBy(owner string) []Approval {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Approval
	for _, a := range r.pending {
		if ownedBy(a.Owner, owner) {
			out = append(out, a)
		}
	}
	return out
}

// resolveOwned removes the pending approvals owned by owner (a call ID)
// and deeper ones, once the nested run went on.
func (r *Run) resolveOwned(owner string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = withoutPending(r.pending, func(a Approval) bool { return ownedBy(a.Owner, owner) })
}

// DecisionsOwnedBy returns copies of the exact decisions on calls of the
// nested run that owner stands for, and deeper ones.
func (r *Run) DecisionsOwnedBy(owner string) []Decision {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Decision
	for _, d := range r.decisions {
		if !d.Always && ownedBy(d.Owner, owner) {
			out = append(out, d)
		}
	}
	return out
}

func ownedBy(o, owner string) bool {
	return owner != "" && (o == owner || strings.HasPrefix(o, owner+"/"))
}
