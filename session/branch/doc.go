// Package branch forks conversations, leaving the original as it was:
// [Run] forks a paused or finished run from its stored checkpoint into a
// new run (in a new session, or its own), to resume it with another
// decision or another model; [Session] forks a session at a position
// into a new session.
//
//	store := branch.Wrap(sessions) // reads forks; forks by reference
//	n, err := branch.Session(ctx, store, "user-42", "user-42b", 12)
//	fork, err := branch.Run(ctx, store, runs, "run-1", branch.Target{RunID: "run-1b", SessionID: "user-42c"})
//	// decide fork's approvals otherwise, save it, and resume "run-1b"
//
// # Forks by reference
//
// Through a [Store] (made by [Wrap] over any session store: memory,
// SQLite, PostgreSQL, Redis, sealed by session/encrypt or not), a fork of
// a session at position n writes one link record, whatever n: the parent
// session, n, the parent's write stamp at the fork and a digest of the n
// items. The record is an item of the fork's own session, appended first
// under a reserved run ID, so it lives in the store as any item does: no
// backend's schema changes, a sealed store seals it under the fork's
// data key, and erasing or clearing the fork deletes it with the fork's
// items. This is why the link is a wrapper's record and not a column of
// each backend: one implementation holds on every backend and under
// encryption, and a backend added later gets forks for free. The price is
// on reads: a read of a fork reads its parent's items written before the
// fork's stamp (O(the parent's items then), whatever the read's limit)
// and checks their digest, and each read of a session that lists a link
// record's form looks the record up once.
//
// The edges, settled:
//
//   - The parent goes on after the fork: its later items (later runs, or
//     late commits of earlier runs, written after the fork's stamp) are
//     not the fork's, and a Pop of the parent above the position is not
//     seen.
//   - The parent loses items at or below the position (a Pop, Clear,
//     erasure, a retention dropping its oldest items): the fork does not
//     change silently: its reads fail with [ErrParentChanged]. Its own
//     items stay (the inner store lists them); Clear it to drop it.
//     Erasing a parent thus erases what its forks shared with it.
//   - A fork of a fork links to the fork, whose link resolves in turn (up
//     to 64 deep).
//   - Write stamps: the fork's own appends take the fork's stamps; its
//     shared items count as written with the link record, so a
//     [session.HistoryQuery] Stamp read from the fork reads them back, and
//     a run's history by reference in the fork holds as in any session.
//   - Pop on the fork removes its own items, newest first; at the shared
//     items it fails with [ErrShared] and changes nothing (fork the fork
//     at a lower position instead: one more record).
//   - Clear or erase the fork: its items and link go, the parent is not
//     touched.
//   - Lookup and ListPage see the shared items too, as entries of the
//     parent's runs (with their places in the parent), after reading the
//     parent's items: a Lookup that the fork's own items answer, or that
//     no session up the chain of forks holds (one index lookup in each),
//     and a page of the fork's own items read nothing more. A page of
//     shared items has a cursor of the Store's own.
//
// A Store passes SaveAppend through to the store it wraps, so a
// checkpointer given a Store as its session store over its own state store
// (checkpoint.New(db, checkpoint.WithSession(branch.Wrap(db)))) keeps each
// save and its append in one transaction.
//
// Given a store that is not a [Store], [Session] copies the items: O(n)
// bytes.
//
// [Run] with a new session through a Store links the items of the runs
// placed before the run and copies the run's own items under the new run
// ID (O(the run's items)); otherwise it copies them all. The forked run
// holds its history whole, not by reference: the reference was read at
// the original session's stamps, which a new session does not have.
package branch
