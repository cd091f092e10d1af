package turnkit_test

import (
	"reflect"
	"testing"

	"github.com/turnkit/turnkit/pipeline"
	"github.com/turnkit/turnkit/state"
)

// TestRunCoreOperationsClosed holds the rule of docs/design.md that a
// middleware reads and annotates a run but can neither move its positions
// nor fake its bookkeeping: the operations that place items, set the
// response boundary, the turn, the agent or the outcome, and those that
// set the version, record a save, or set the session, its watermark or the
// history, are not methods of *state.Run (the core reaches them through
// internal/runcore; see TestDependencyDirection for who may import it, and
// TestGuardedDoorsTakeAnInternalKey holds the other half of that rule:
// the exported ways to the guarded operations, state.Core (the run's core
// operations) and pipeline.Core (the core's turn building, for
// pipelinetest), take a key whose type lives in an internal package
// (internal/key, which TestDependencyDirection closes to the doors' owners
// and holders), so no package outside the module can make a valid one.
func TestGuardedDoorsTakeAnInternalKey(t *testing.T) {
	doors := map[string]any{"state.Core": state.Core, "pipeline.Core": pipeline.Core}
	for name, door := range doors {
		typ := reflect.TypeOf(door)
		if typ.NumIn() != 1 {
			t.Errorf("%s takes %d arguments, want one key", name, typ.NumIn())
			continue
		}
		if got, want := typ.In(0).PkgPath(), module+"/internal/key"; got != want {
			t.Errorf("%s's key is of package %q, want %q", name, got, want)
		}
	}
}

// TestRunCoreDoorTakesAnInternalKey holds the other half of that rule: the
// one exported way to the guarded operations, state.Core, takes a key
// whose type lives in an internal package (internal/key, which
// TestDependencyDirection closes to state and runcore), so no package
// outside the module can make a valid one.
func TestRunCoreDoorTakesAnInternalKey(t *testing.T) {
	typ := reflect.TypeOf(state.Core)
	if typ.NumIn() != 1 {
		t.Fatalf("state.Core takes %d arguments, want one key", typ.NumIn())
	}
	if got, want := typ.In(0).PkgPath(), module+"/internal/key"; got != want {
		t.Errorf("state.Core's key is of package %q, want %q", got, want)
	}
}
