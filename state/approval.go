package state

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
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
}

// Fingerprint returns the fingerprint a decision on this call binds to.
func (a Approval) Fingerprint() string { return Fingerprint(a.Tool, a.Arguments) }

// Fingerprint returns a stable digest of a tool name and its arguments.
// A decision records it; a call whose arguments changed after the decision
// no longer matches.
func Fingerprint(tool, arguments string) string {
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write([]byte(arguments))
	return hex.EncodeToString(h.Sum(nil))
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
}

// Pending returns copies of the approvals the run is waiting for, in call
// order.
func (r *Run) Pending() []Approval {
	r.mu.Lock()
	defer r.mu.Unlock()
	return clonePending(r.pending)
}

// AddPending records that a call waits for a decision. Recording the same
// call ID again replaces the earlier record.
func (r *Run) AddPending(a Approval) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.pending {
		if r.pending[i].CallID == a.CallID {
			r.pending[i] = a
			return
		}
	}
	r.pending = append(r.pending, a)
	slices.SortFunc(r.pending, func(x, y Approval) int { return cmpInt64(x.Seq, y.Seq) })
}

// ResolvePending removes the call from the pending approvals, once it ran or
// was rejected.
func (r *Run) ResolvePending(callID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = slices.DeleteFunc(r.pending, func(a Approval) bool { return a.CallID == callID })
}

// Decisions returns copies of the recorded decisions, in the order made.
func (r *Run) Decisions() []Decision {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.decisions)
}

// AddDecision records a decision as given. The approval package's methods
// check a decision before recording it; this is the raw write they use.
func (r *Run) AddDecision(d Decision) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.decisions = append(r.decisions, d)
}

// DecisionFor returns the decision that governs a call: the latest exact
// decision for its call ID, or else the latest "always" decision for its
// tool. exact reports which one it is; the caller checks the fingerprint.
func (r *Run) DecisionFor(tool, callID string) (d Decision, exact, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.decisions) - 1; i >= 0; i-- {
		if x := r.decisions[i]; x.CallID == callID && x.CallID != "" {
			return x, true, true
		}
	}
	for i := len(r.decisions) - 1; i >= 0; i-- {
		if x := r.decisions[i]; x.Always && x.Tool == tool {
			return x, false, true
		}
	}
	return Decision{}, false, false
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
