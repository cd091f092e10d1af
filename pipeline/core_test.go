package pipeline_test

import (
	"testing"

	"github.com/turnkit/turnkit/internal/key"
	"github.com/turnkit/turnkit/pipeline"
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
			t.Error("pipeline.Core opened the core's turn building to the zero key")
		}
	}()
	callWithZero(pipeline.Core)
}

func TestCoreOpensToAMadeKey(t *testing.T) {
	c := pipeline.Core(key.Make())
	run := state.NewRun("run-1", "assistant")
	agent := &pipeline.Agent{Name: "assistant"}
	if turn := c.NewTurn(run, agent, 2, nil); turn.Run != run || turn.Agent != agent || turn.Number != 2 {
		t.Errorf("NewTurn = %+v, want turn 2 of the run for the agent", turn)
	}
}
