package state_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/statetest"
)

func TestAnswerElicitationRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		call    string
		action  state.ElicitAction
		content string
		wantErr error
	}{
		{name: "accept", call: "call_book", action: state.Accept, content: `{"allergies":"none"}`},
		{name: "accept without content", call: "call_book", action: state.Accept},
		{name: "decline", call: "call_book", action: state.Decline},
		{name: "cancel", call: "call_book", action: state.Cancel},
		{name: "content not an object", call: "call_book", action: state.Accept, content: `["x"]`, wantErr: state.ErrInvalidAnswer},
		{name: "malformed content", call: "call_book", action: state.Accept, content: `{"a":`, wantErr: state.ErrInvalidAnswer},
		{name: "content with decline", call: "call_book", action: state.Decline, content: `{}`, wantErr: state.ErrInvalidAnswer},
		{name: "no action", call: "call_book", wantErr: state.ErrInvalidAnswer},
		{name: "an approval", call: "call_pay", action: state.Accept, wantErr: state.ErrNotElicitation},
		{name: "unknown call", call: "call_nope", action: state.Accept, wantErr: state.ErrUnknownCall},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := statetest.ElicitingRun(t, "run_e")
			before := r.Decisions()
			err := r.AnswerElicitation(tt.call, tt.action, tt.content)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("AnswerElicitation = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				if _, ok := errors.AsType[*state.DecisionError](err); !ok {
					t.Fatalf("error %T is not a *DecisionError", err)
				}
				if len(r.Decisions()) != len(before) {
					t.Fatal("a failed answer changed the decisions")
				}
				return
			}
			d, ok := r.ElicitationAnswerFor("book", "call_book", r.Pending()[0].Elicitation)
			if !ok || d.Answer.Action != tt.action || (tt.action == state.Accept) != (d.Verdict == state.Approved) {
				t.Fatalf("recorded answer = %+v, %v", d, ok)
			}
			if err := r.AnswerElicitation("call_book", state.Cancel, ""); !errors.Is(err, state.ErrAlreadyDecided) || !errors.Is(err, state.ErrConflict) {
				t.Fatalf("second answer to one request = %v, want ErrAlreadyDecided and ErrConflict", err)
			}
		})
	}
}

// TestElicitationIsNotAnApproval: an answer does not decide the call's
// approval, nor the other way round, and one call holds an answer per
// request it made.
func TestElicitationIsNotAnApproval(t *testing.T) {
	t.Parallel()
	r := statetest.ElicitingRun(t, "run_e")
	if err := r.Approve("call_book"); !errors.Is(err, state.ErrNotElicitation) {
		t.Fatalf("Approve of a call waiting for an answer = %v, want ErrNotElicitation", err)
	}
	if _, _, ok := r.DecisionFor("book", "call_book"); ok {
		t.Fatal("DecisionFor found the answer to an elicitation as an approval")
	}
	if err := r.AnswerElicitation("call_book", state.Accept, `{"allergies":"nuts"}`); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range r.Decisions() {
		if d.CallID == "call_book" && d.IsAnswer() {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("call_book has %d answers, want one per request (2)", n)
	}
	if err := r.Approve("call_pay"); err != nil {
		t.Fatalf("approving the other call: %v", err)
	}
	other := state.Elicitation{Server: "diner", Message: "How many guests? <\u2028>"}
	if _, ok := r.ElicitationAnswerFor("book", "call_book", other); ok {
		t.Fatal("an answer matched a request with another schema")
	}
}

// TestElicitationCheckpointRefused: a checkpoint whose answer or pending
// request does not hold together is refused with a typed error.
func TestElicitationCheckpointRefused(t *testing.T) {
	t.Parallel()
	good := mustMarshal(t, statetest.ElicitingRun(t, "run_e"))
	tests := []struct {
		name, old, new string
	}{
		{"answer on always", `"verdict":"approved","answer"`, `"verdict":"approved","always":true,"answer"`},
		{"verdict does not fit", `"verdict":"approved","answer"`, `"verdict":"rejected","answer"`},
		{"content with cancel", `"action":"accept"`, `"action":"cancel"`},
		{"request without server", `"server":"diner"`, `"server":""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			data := bytes.Replace(good, []byte(tt.old), []byte(tt.new), 1)
			if bytes.Equal(data, good) {
				t.Fatalf("%q not in the checkpoint", tt.old)
			}
			checkUnmarshal(t, data)
			if _, err := state.Unmarshal(data); err == nil {
				t.Fatal("Unmarshal accepted it")
			} else if _, ok := errors.AsType[*state.DecodeError](err); !ok || !errors.Is(err, state.ErrInvalid) {
				t.Fatalf("error %v is not a *DecodeError wrapping ErrInvalid", err)
			}
		})
	}
}

// TestUnmarshalFastElicitation: the fast path reads a pending request
// itself, as the reference does.
func TestUnmarshalFastElicitation(t *testing.T) {
	t.Parallel()
	data := mustMarshal(t, statetest.ElicitingRun(t, "run_e"))
	got := state.UnmarshalFastOnly(data, nil)
	if got == nil {
		t.Fatal("the fast path gave up on a pending elicitation")
	}
	if p := got.Pending(); len(p) != 2 || p[0].Elicitation.Message != "Any allergies?" {
		t.Fatalf("pending = %+v", p)
	}
	checkUnmarshal(t, data)
}
