package storage_test

import (
	"context"
	"fmt"

	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/storage"
)

// A store written outside turnkit is a Backend (here mapBackend, of this
// package's test: a map under a lock); NewStore makes it a state.Store.
func ExampleNewStore() {
	ctx := context.Background()
	store := storage.NewStore(newMapBackend())

	run := state.NewRun("run-1", "assistant")
	if err := store.Save(ctx, run); err != nil {
		panic(err)
	}
	run.SetExtension("note", []byte(`"saved twice"`))
	if err := store.Save(ctx, run); err != nil {
		panic(err)
	}
	loaded, err := store.Load(ctx, "run-1")
	if err != nil {
		panic(err)
	}
	note, _ := loaded.Extension("note")
	fmt.Println(run.Version(), loaded.Version(), string(note))

	stale, _ := store.Load(ctx, "run-1")
	_ = store.Save(ctx, loaded)
	fmt.Println(store.Save(ctx, stale))
	// Output:
	// 2 2 "saved twice"
	// state: save run "run-1": version conflict (have version 2, stored 3)
}
