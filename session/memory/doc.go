// Package memory provides an in-process [session.Store]: sessions live in
// a map guarded by a mutex and disappear with the process.
//
//	store := memory.New()
//	defer store.Close()
//	runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store)))
//
// It is the store for tests, examples and single-process programs that do
// not need their conversations to survive a restart; session/sqlite is the
// embedded default that does.
//
// # Cost
//
// Append is O(items appended) when the items land after the session's last
// item, which is the common case; an item committed late (a held-back
// message) is inserted in O(session length). List with a limit is
// O(limit). Lookup is O(1).
package memory
