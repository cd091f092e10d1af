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
// internal/runcore; see TestDependencyDirection for who may import it, and
// TestRunCoreDoorTakesAnInternalKey for how it opens).
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

// TestRunCoreDoorTakesAnInternalKey holds the other half of that rule: the
// one exported way to the guarded operations, state.Core, takes a key
// whose type lives in an internal package (internal/runcore/key, which
// TestDependencyDirection closes to state and runcore), so no package
// outside the module can make a valid one.
func TestRunCoreDoorTakesAnInternalKey(t *testing.T) {
	typ := reflect.TypeOf(state.Core)
	if typ.NumIn() != 1 {
		t.Fatalf("state.Core takes %d arguments, want one key", typ.NumIn())
	}
	if got, want := typ.In(0).PkgPath(), module+"/internal/runcore/key"; got != want {
		t.Errorf("state.Core's key is of package %q, want %q", got, want)
	}
}
