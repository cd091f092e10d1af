package approval

import (
	"errors"
	"fmt"
)

// ErrPolicy means a policy or a tool's approval requirement failed and
// the call was held for approval. It is wrapped by [*PolicyError]; match
// it with errors.Is.
var ErrPolicy = errors.New("approval: approval requirement failed")

// A PolicyError reports a policy or a tool's approval requirement that
// failed; the call was held for approval (fail closed). It reaches the
// handler set with [WithErrorHandler].
type PolicyError struct {
	Tool   string
	CallID string
	Err    error
}

// Error names the tool, the call and the policy's error.
func (e *PolicyError) Error() string {
	return fmt.Sprintf("approval: tool %q call %s: approval requirement failed (held for approval): %v", e.Tool, e.CallID, e.Err)
}

// Unwrap returns [ErrPolicy] and the cause.
func (e *PolicyError) Unwrap() []error { return []error{ErrPolicy, e.Err} }
