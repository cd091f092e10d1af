package approval_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/turnkit/turnkit/middleware/approval"
)

// TestPolicyErrorMatchesSentinel: a *PolicyError matches ErrPolicy and
// its cause with errors.Is, and errors.As finds it through a wrapper.
func TestPolicyErrorMatchesSentinel(t *testing.T) {
	cause := errors.New("policy service down")
	err := fmt.Errorf("outer: %w", &approval.PolicyError{Tool: "t", CallID: "c", Err: cause})
	if !errors.Is(err, approval.ErrPolicy) || !errors.Is(err, cause) {
		t.Errorf("errors.Is(ErrPolicy) = %v, errors.Is(cause) = %v; want both", errors.Is(err, approval.ErrPolicy), errors.Is(err, cause))
	}
	if _, ok := errors.AsType[*approval.PolicyError](err); !ok {
		t.Error("errors.As found no *PolicyError")
	}
}
