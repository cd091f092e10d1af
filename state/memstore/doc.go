// Package memstore is a [state.Store] in memory, for tests, examples and
// one-process programs: run checkpoints with compare-and-swap on the
// version, kept encoded, as a durable store keeps them.
//
// It is named memstore, not memory, so that it reads apart from the
// in-memory session store at the call sites that use both:
//
//	states, sessions := memstore.New(), memory.New()
//
// It is a backend of package state/storage, as a store written outside
// turnkit is: it writes the delta [storage.Save] hands it (what changed
// since the last save) and returns what it keeps for [storage.Load] to
// reassemble; it never changes a run.
package memstore
