// Package storage is the protocol between a run and a checkpoint store
// written outside turnkit: the store keeps what each save wrote, and this
// package saves and loads runs through it.
//
// A store author implements a [Backend]: Write applies one [state.Delta]
// as a compare-and-swap on the stored version and returns the version it
// stored, Read returns what the writes left ([Stored]: the head, the
// context and the pieces), Delete drops a run. A backend never touches a
// run: [Save] takes the run's delta, has the backend write it, and only
// then records the save on the run, so the run's next delta starts from
// what the backend holds; [Load] reassembles a run with [state.Assemble].
// [NewStore] makes a backend a [state.Store] (and a [state.Lister] when
// the backend lists runs), which the checkpoint middleware, the runner
// and package statetest take:
//
//	store := storage.NewStore(myBackend, storage.WithCodec(marshal, unmarshal))
//	statetest.TestStore(t, func(t *testing.T) state.Store { return store })
//
// A save costs O(its new items) whatever the run's history: the delta
// holds the items recorded since the version the run was loaded or saved
// at, the run's small mutable part as a head, and the context only when it
// was replaced (see [state.Delta] for what a backend does with each).
package storage
