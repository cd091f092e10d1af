// Package sqlite provides the embedded default [session.Store]: sessions in
// one SQLite file, through modernc.org/sqlite (pure Go, no cgo).
//
//	store, err := sqlite.Open("chat.db")
//	if err != nil {
//		return err
//	}
//	defer store.Close()
//	runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store)))
//
// # Durability and concurrency
//
// The file is in WAL mode: readers run beside the one writer. Every append
// is one immediate transaction (all its items or none), writers in one
// process take turns without polling, and a writer in another process waits
// up to the busy timeout ([WithBusyTimeout]) for the file's lock, so several
// processes can share one file. synchronous=NORMAL: a committed append
// survives a process crash; a power loss may lose the last commits but never
// corrupts the file.
//
// # Schema
//
// The schema is created and upgraded by migrations embedded in the package
// (migrations/NNNN_name.sql), applied in order in one transaction and
// recorded in the schema_version table. [Open] applies them; where
// migration is a step of its own, run [Migrate] and open the store
// [WithoutMigrations], which only checks the version and refuses a file
// that is behind with [ErrNotMigrated]. A file migrated by a newer version
// of this package is refused with [ErrSchemaVersion].
//
// Items are stored as (session, the run's place, Seq, kind name, tool name,
// canonical JSON) and ordered by (place, Seq); a run's place is fixed when
// it first appends. The same file also holds run checkpoints
// ([state.Store]), saved as deltas ([state.Delta]): a save writes the run's
// head and the items recorded since the last save, in one immediate
// transaction, so its cost does not grow with the run's history; checkpoints
// of the earlier whole-document format still load. [Store.SaveAppend] saves
// a checkpoint and appends to a session in one transaction.
//
// # Signed checkpoints
//
// [WithCodec] takes the same options as the WithCodec of every other
// checkpoint store (state/memstore, state/filestore, the other session
// backends), so every store is configured the same way. Signed with
// [state.WithSigningKey] and verified with [state.WithVerifyKeys], a
// checkpoint edited in the database (its run, its signature, its key ID,
// its items or context rows, one of them removed or added) fails to load
// with an error wrapping [state.ErrTampered]; during a key rotation sign
// with the new key and verify with the old and the new one:
//
//	store, err := sqlite.Open("chat.db", sqlite.WithCodec(
//		[]state.MarshalOption{state.WithSigningKey("k2", newKey)},
//		[]state.UnmarshalOption{state.WithVerifyKeys(map[string][]byte{"k1": oldKey, "k2": newKey})},
//	))
//
// Session items are not signed.
package sqlite
