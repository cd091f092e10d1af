// Package session defines the conversation memory of agent runs: a
// [Store] keeps a session's items in order, across runs and processes.
//
// The backends live in their own packages, each pulling its driver only into
// itself: session/memory, session/sqlite (the embedded default), and
// session/postgres and session/redis for many workers. Every backend passes
// the conformance suite in session/sessiontest.
//
// # Order and idempotency
//
// A session lists items by (the run's place in the session, Seq). A run's
// place is fixed by its first append, so an item committed late (a final
// message held back until the output guardrails passed) still lands at its
// original position. Appends are idempotent on (run ID, Seq): an append
// retried after an ambiguous failure never duplicates and never drops an
// item.
package session
