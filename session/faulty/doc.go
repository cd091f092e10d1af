// Package faulty wraps a [session.Store] with injected faults, to test
// that what writes to a session survives its failures: an append that
// fails before it writes, one that writes and then reports an error (the
// caller cannot tell whether it happened), one that fails on the Nth call,
// and one that is slow enough for the caller's context to be cancelled
// while it waits.
//
//	store := faulty.New(memory.New(), faulty.FailAfter(2)) // the 2nd append writes, then fails
//	// ... run, get a *persistence.AppendError, resume, check the session.
//
// A fault aims at all appends, counted from 1 across all sessions, or at
// those of one run, position or item kind, counted among themselves:
//
//	faulty.FailAfter(1).OfKind(state.KindAssistantMessage) // the final message's first append
//	faulty.FailBefore(1).InRun("run_2").AtSeq(4)             // the append of run_2's item 4
//
// Faults are for tests; the wrapper adds a mutex and nothing else to the
// inner store.
package faulty
