package filestore_test

import (
	"context"
	"fmt"
	"os"

	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/filestore"
)

// Save is a compare-and-swap on the version the run was loaded at: of two
// workers holding the same version, one wins.
func Example() {
	dir, _ := os.MkdirTemp("", "checkpoints")
	defer os.RemoveAll(dir)
	store, _ := filestore.New(dir)
	ctx := context.Background()
	_ = store.Save(ctx, state.NewRun("run_1", "assistant"))

	a, _ := store.Load(ctx, "run_1")
	b, _ := store.Load(ctx, "run_1")
	fmt.Println("a:", store.Save(ctx, a))
	fmt.Println("b:", store.Save(ctx, b))
	// Output:
	// a: <nil>
	// b: state: save run "run_1": version conflict (have version 1, stored 2)
}
