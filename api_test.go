package turnkit_test

import (
	"reflect"
	"testing"

	"github.com/turnkit/turnkit/state"
)

// TestRunCoreOperationsClosed holds the rule of docs/design.md that a
// middleware reads and annotates a run but can neither move its positions
// nor fake its bookkeeping: the operations that place items, set the
// response boundary, the turn, the agent or the outcome, and those that
// set the version, record a save, or set the session, its watermark or the
// history, are not methods of *state.Run (the core reaches them through
// internal/runcore; see TestDependencyDirection for who may import it).
func TestRunCoreOperationsClosed(t *testing.T) {
	core := []string{
		"Place", "Reserve", "Record", "SetResponse", "AddInput", "SetTurn", "SetMaxTurns",
		"SetAgent", "Finish", "Unfinish", "AddUsage", "AddPending", "ResolvePending",
		"ResolveOwned", "AddDecision", "ReplaceContext",
		// The stores' and persistence's bookkeeping, behind the same door.
		"SetVersion", "Saved", "SetSessionID", "SetSessionWatermark", "SetHistory", "SetSessionHistory",
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
