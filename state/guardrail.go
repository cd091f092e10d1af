package state

import (
	"encoding/json"
	"errors"
	"slices"
)

var errInvalidVerdict = errors.New("state: invalid verdict")

// A GuardrailStage says what a guardrail checked. The zero value is invalid.
type GuardrailStage uint8

// The guardrail stages.
const (
	StageInput GuardrailStage = iota + 1
	StageOutput
	StageToolInput
	StageToolOutput
)

var stageNames = [...]string{
	StageInput:      "input",
	StageOutput:     "output",
	StageToolInput:  "tool_input",
	StageToolOutput: "tool_output",
}

// String returns the stage's stable name, such as "tool_input".
func (s GuardrailStage) String() string {
	if s == 0 || int(s) >= len(stageNames) {
		return "GuardrailStage(invalid)"
	}
	return stageNames[s]
}

// valid reports whether s is one of the stages.
func (s GuardrailStage) valid() bool { return s != 0 && int(s) < len(stageNames) }

// MarshalText writes the stage's stable name.
func (s GuardrailStage) MarshalText() ([]byte, error) {
	if !s.valid() {
		return nil, errors.New("state: invalid guardrail stage")
	}
	return []byte(stageNames[s]), nil
}

// UnmarshalText reads a stage's stable name.
func (s *GuardrailStage) UnmarshalText(b []byte) error {
	for i := StageInput; int(i) < len(stageNames); i++ {
		if stageNames[i] == string(b) {
			*s = i
			return nil
		}
	}
	return errors.New("state: unknown guardrail stage " + string(b))
}

// A GuardrailResult records one guardrail's verdict.
type GuardrailResult struct {
	Name  string         `json:"name"`
	Stage GuardrailStage `json:"stage"`
	Turn  int            `json:"turn"`
	// CallID names the tool call a tool guardrail checked.
	CallID string `json:"call_id,omitempty"`
	// Tripped reports a tripwire. Behavior says what a passing tool
	// guardrail did: "allow", "reject" or "replace".
	Tripped  bool            `json:"tripped"`
	Behavior string          `json:"behavior,omitempty"`
	Message  string          `json:"message,omitempty"`
	Info     json.RawMessage `json:"info,omitempty"`
}

// GuardrailResults returns copies of the guardrail results in the order they
// were recorded.
func (r *Run) GuardrailResults() []GuardrailResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	return cloneGuards(r.guards)
}

// AddGuardrailResult records a guardrail result. Guardrails record their
// result before anything later in the turn that could fail, so a failed
// session append cannot lose it.
func (r *Run) AddGuardrailResult(g GuardrailResult) {
	g.Info = slices.Clone(g.Info)
	r.mu.Lock()
	r.guards = append(r.guards, g)
	r.mu.Unlock()
}

func cloneGuards(g []GuardrailResult) []GuardrailResult {
	out := slices.Clone(g)
	for i := range out {
		out[i].Info = slices.Clone(out[i].Info)
	}
	return out
}
