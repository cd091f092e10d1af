package state_test

import (
	"testing"

	"github.com/turnkit/turnkit/internal/key"
	"github.com/turnkit/turnkit/state"
)

// callWithZero calls f with the zero value of its parameter's type: code
// outside the module can do this without naming internal/key.
func callWithZero[K, R any](f func(K) R) R {
	var k K
	return f(k)
}

func TestCoreRefusesTheZeroKey(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("state.Core opened its operations to the zero key")
		}
	}()
	callWithZero(state.Core)
}

func TestCoreOpensToAMadeKey(t *testing.T) {
	ops := state.Core(key.Make())
	r := state.NewRun("run-1", "assistant")
	ops.SetTurn(r, 3)
	if r.Turn() != 3 {
		t.Errorf("Turn = %d after SetTurn(3) through Core", r.Turn())
	}
}
