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
//
// # Reading a conversation again
//
// A [Cache] keeps the decoded history of the sessions a process read, and
// checks it against the store on every read with one [ChangeReader] call:
// the items written since its last read (by any process, wherever they
// are placed) are merged in, and a removal since (a Pop, a Clear) makes it
// read the session again. So the next message of a conversation decodes
// only what the last one added, within a memory budget. Persistence reads
// a run's history through one by default.
package session
