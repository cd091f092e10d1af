// Package memstore is a [state.Store] in memory, for tests, examples and
// one-process programs: run checkpoints with compare-and-swap on the
// version, kept encoded, as a durable store keeps them.
//
// It is named memstore, not memory, so that it reads apart from the
// in-memory session store at the call sites that use both:
//
//	states, sessions := memstore.New(), memory.New()
//
// Like the SQL and Redis checkpoint stores beside the session stores, it
// uses [state.Run.Delta] to save what changed (and records the save with
// runcore.Saved, which only turnkit's stores reach), [state.Assemble] to load.
package memstore
