// Package statetest is the conformance suite every [state.Store] passes,
// as testing/fstest is for file systems: a backend's test calls
// [TestStore] with a constructor, and the suite checks the contract of
// state.Store (compare-and-swap on the version, ErrConflict and
// ErrNotFound, detached loads, idempotent deletes, context cancellation).
// A store that can sign checkpoints also calls [TestSignedStore], with a
// way to edit its stored checkpoints behind its back: edits, untrusted or
// missing signatures must fail with state.ErrTampered, and key rotation
// must work.
//
// A store written outside turnkit runs it too: a state/storage Backend
// made a Store with storage.NewStore needs nothing but public API, and
// state/storage's own test runs the suite on one.
//
// [SampleRun] builds a run that uses every part of the state, for stores
// and codecs to round-trip.
package statetest
