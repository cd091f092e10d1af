// Package branch forks conversations, leaving the original as it was:
// [Run] forks a paused or finished run from its stored checkpoint into a
// new run (in a new session, or its own), to resume it with another
// decision or another model; [Session] forks a session at a position
// into a new session.
//
//	fork, err := branch.Run(ctx, store, store, "run-1", branch.Target{RunID: "run-1b", SessionID: "user-42b"})
//	// decide fork's approvals otherwise, save it, and resume "run-1b"
//
// # Cost
//
// A fork copies: [Session] appends the items it keeps to the new session,
// O(those items) bytes, and [Run] copies its session's history with them
// and writes the fork's checkpoint whole. Sharing the items by reference
// (O(1) bytes whatever the history) needs the session stores to resolve a
// session's prefix through another session, a change of their schemas
// that is not made here.
package branch
