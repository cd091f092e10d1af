package turnkit_test

import (
	"reflect"
	"testing"

	"github.com/turnkit/turnkit/state"
)

// TestRunCoreOperationsClosed holds the rule of docs/design.md that a
// middleware reads and annotates a run but cannot move its positions: the operations
// that place items, set the response boundary, the turn, the agent or the
// outcome are not methods of *state.Run (the core reaches them through
// internal/runcore; see TestDependencyDirection for who may import it).
func TestRunCoreOperationsClosed(t *testing.T) {
	core := []string{
		"Place", "Reserve", "Record", "SetResponse", "AddInput", "SetTurn", "SetMaxTurns",
		"SetAgent", "Finish", "Unfinish", "AddUsage", "AddPending", "ResolvePending",
		"ResolveOwned", "AddDecision", "ReplaceContext",
	}
	typ := reflect.TypeFor[*state.Run]()
	for _, name := range core {
		if _, ok := typ.MethodByName(name); ok {
			t.Errorf("*state.Run has the core operation %s in its API", name)
		}
	}
	if typ.NumMethod() < 20 {
		t.Fatalf("*state.Run has %d exported methods: the test is not looking at the run", typ.NumMethod())
	}
}
