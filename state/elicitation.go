package state

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// An MCP server may ask the user for input while one of its tools runs
// (MCP elicitation: a message and the JSON schema the answer must fit).
// A run that pauses on such a request records it as a pending [Approval]
// of the tool call whose Elicitation is set; the answer is an exact
// [Decision] on that call whose Answer is set, made with
// [Run.AnswerElicitation]. Both travel in checkpoints with the approvals
// and decisions, so the run resumes in any process. One call may ask
// several times, one request after another: each answer is bound to its
// request ([Elicitation.Fingerprint]), so a call holds one answer per
// request it made.

// An Elicitation is an MCP server's request for input from the user,
// made during a tool call. Schema is the requested schema's JSON (an
// object schema of flat properties, as MCP allows), "" when the request
// had none. It is a comparable value: a copy shares nothing with the run.
type Elicitation struct {
	Server  string `json:"server"`
	Message string `json:"message"`
	Schema  string `json:"schema,omitempty"`
}

// Fingerprint returns the digest an answer binds to: the server, the
// message and the schema. A call that asks again with the same message
// and schema gets the same answer; any other request needs its own.
func (e Elicitation) Fingerprint() string {
	h := sha256.New()
	for _, s := range [...]string{e.Server, e.Message, e.Schema} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// IsElicitation reports whether the call waits for an answer to an MCP
// server's request for input rather than for an approval.
func (a Approval) IsElicitation() bool { return a.Elicitation != Elicitation{} }

// An ElicitAction is the user's answer to an elicitation, as MCP names
// them. The zero ElicitAction is invalid.
type ElicitAction uint8

// The actions.
const (
	// Accept: the user submitted the requested content.
	Accept ElicitAction = iota + 1
	// Decline: the user refused to give it.
	Decline
	// Cancel: the user dismissed the request without choosing.
	Cancel
)

var errInvalidAction = errors.New("state: invalid elicitation action")

// String returns "accept", "decline" or "cancel", MCP's names.
func (a ElicitAction) String() string {
	switch a {
	case Accept:
		return "accept"
	case Decline:
		return "decline"
	case Cancel:
		return "cancel"
	}
	return "ElicitAction(invalid)"
}

// MarshalText writes the action's name.
func (a ElicitAction) MarshalText() ([]byte, error) {
	if a < Accept || a > Cancel {
		return nil, errInvalidAction
	}
	return []byte(a.String()), nil
}

// UnmarshalText reads an action's name.
func (a *ElicitAction) UnmarshalText(b []byte) error {
	switch string(b) {
	case "accept":
		*a = Accept
	case "decline":
		*a = Decline
	case "cancel":
		*a = Cancel
	default:
		return errInvalidAction
	}
	return nil
}

// An ElicitationAnswer is the user's answer to one elicitation: Request
// is the [Elicitation.Fingerprint] of the request it answers, Content the
// submitted JSON object (with Accept only; "" otherwise). A decision
// holding one is an answer, not an approval: [Run.DecisionFor] and the
// approval rules ignore it.
type ElicitationAnswer struct {
	Request string       `json:"request"`
	Action  ElicitAction `json:"action"`
	Content string       `json:"content,omitempty"`
}

// IsAnswer reports whether the decision answers an elicitation rather
// than approving or rejecting a call.
//
// (The answer types have no IsZero method on purpose: encoding/json would
// box each value to call it, an allocation per approval and decision in
// every checkpoint.)
func (d Decision) IsAnswer() bool { return d.Answer != ElicitationAnswer{} }

// AnswerElicitation answers the elicitation the pending call callID waits
// for: the next resume calls the tool again and gives the server this
// answer when it asks the same thing. content is the submitted JSON
// object with [Accept] ("" stands for {}), and must be "" otherwise; it
// is checked against no schema here (package tool/mcp's Accept does).
// Like [Run.Approve], it binds to the call's tool and arguments. A call ID
// with no pending request fails with a [*DecisionError] wrapping
// [ErrUnknownCall] ([ErrNotElicitation] for a call waiting for an
// approval), a request already answered with one wrapping
// [ErrAlreadyDecided] and [ErrConflict], and a bad action or content with
// one wrapping [ErrInvalidAnswer]. A failed call changes nothing.
func (r *Run) AnswerElicitation(callID string, action ElicitAction, content string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.IndexFunc(r.pending, func(a Approval) bool { return a.CallID == callID })
	if i < 0 {
		return &DecisionError{RunID: r.id, CallID: callID, Err: ErrUnknownCall}
	}
	a := r.pending[i]
	if !a.IsElicitation() {
		return &DecisionError{RunID: r.id, CallID: callID, Tool: a.Tool, Err: ErrNotElicitation}
	}
	if err := checkAnswer(action, content); err != nil {
		return &DecisionError{RunID: r.id, CallID: callID, Tool: a.Tool, Err: err}
	}
	if action == Accept {
		content = string(compact([]byte(content)))
	}
	ans := ElicitationAnswer{Request: a.Elicitation.Fingerprint(), Action: action, Content: content}
	if r.answerLocked(a.Tool, callID, ans.Request) >= 0 {
		return &DecisionError{RunID: r.id, CallID: callID, Tool: a.Tool, Err: ErrAlreadyDecided}
	}
	r.decisions = append(r.decisions, Decision{
		Tool: a.Tool, CallID: callID, Fingerprint: a.Fingerprint(), Verdict: answerVerdict(action),
		Owner: a.Owner, Answer: ans,
	})
	return nil
}

// ElicitationAnswerFor returns the answer recorded for the request e made
// by the call callID of tool, and the decision that holds it (whose
// arguments fingerprint the caller checks, see [Decision.Check]).
func (r *Run) ElicitationAnswerFor(tool, callID string, e Elicitation) (Decision, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := r.answerLocked(tool, callID, e.Fingerprint()); i >= 0 {
		return r.decisions[i], true
	}
	return Decision{}, false
}

// answerLocked returns the index of the answer to the request fp of the
// call, or -1.
func (r *Run) answerLocked(tool, callID, fp string) int {
	return slices.IndexFunc(r.decisions, func(x Decision) bool {
		return x.Answer.Request == fp && x.CallID == callID && x.Tool == tool
	})
}

// answerVerdict is the verdict an answer's decision carries, for readers
// that know verdicts only: an accepted request is approved, a declined
// or cancelled one rejected.
func answerVerdict(a ElicitAction) Verdict {
	if a == Accept {
		return Approved
	}
	return Rejected
}

// checkAnswer checks an action and its content: a JSON object (or
// nothing) with Accept, nothing otherwise.
func checkAnswer(action ElicitAction, content string) error {
	switch action {
	case Accept:
		if content == "" {
			return nil
		}
		b := bytes.TrimSpace([]byte(content))
		if len(b) == 0 || b[0] != '{' || !json.Valid(b) {
			return fmt.Errorf("%w: content is not a JSON object", ErrInvalidAnswer)
		}
		return nil
	case Decline, Cancel:
		if content != "" {
			return fmt.Errorf("%w: content given with %s", ErrInvalidAnswer, action)
		}
		return nil
	}
	return fmt.Errorf("%w: action %d", ErrInvalidAnswer, action)
}

// PendingCall returns a copy of the pending entry of the call callID: an
// approval, or a request for input ([Approval.IsElicitation]).
func (r *Run) PendingCall(callID string) (Approval, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := slices.IndexFunc(r.pending, func(a Approval) bool { return a.CallID == callID }); i >= 0 {
		return r.pending[i], true
	}
	return Approval{}, false
}

// DecisionOn returns the decision that settles the pending entry a: the
// answer to its request when it waits for one, else the approval
// decision that governs the call ([Run.DecisionFor]).
func (r *Run) DecisionOn(a Approval) (Decision, bool) {
	if a.IsElicitation() {
		return r.ElicitationAnswerFor(a.Tool, a.CallID, a.Elicitation)
	}
	d, _, ok := r.DecisionFor(a.Tool, a.CallID)
	return d, ok
}
