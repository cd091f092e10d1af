// Package postgres provides a [session.Store] in PostgreSQL, through pgx v5,
// for many workers sharing sessions and checkpoints.
//
//	store, err := postgres.Open(ctx, os.Getenv("DATABASE_URL"))
//	if err != nil {
//		return err
//	}
//	defer store.Close()
//	runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store)))
//
// [New] takes a *pgxpool.Pool the caller owns instead. It needs
// PostgreSQL 12 or later (an append sets plan_cache_mode for its own
// transaction); CI runs PostgreSQL 15.
//
// # Order and idempotency
//
// Every append is one transaction. Items are inserted with
// INSERT ... ON CONFLICT DO NOTHING on (session, the run's place, Seq); a
// position already taken is then compared with the new item, and a
// different item rejects the whole append with [session.ErrConflict]. A
// run's place is handed out from a per-session counter row when the run
// first appends; the row's lock makes places follow commit order, so
// workers racing to start runs in one session never interleave them. The
// common append (a known run) is one statement inside its transaction.
// Appends hold an advisory lock on their session shared, and Clear and
// Pop hold it exclusive (class 1953196404, "tkit"), so a clear never
// orphans an append in flight. An append takes the lock in a statement of
// its own, before the statements that read the session: a statement reads
// the snapshot taken when it starts, which would predate a lock it waited
// for. SaveAppend's commit of a run's later turns takes none: one
// statement, ordered with a Clear by the session head's row, which both
// update, and written only if the session's generation, which Clear and
// Pop move, is the one it read.
//
// # Schema
//
// The tables live in one schema ([WithSchema], default "turnkit"), created
// and upgraded by migrations embedded in the package, applied in one
// transaction under an advisory lock and recorded in its schema_version
// table. [Open] and [New] apply them; where migration is a step of its
// own, run [Migrate] and make the stores [WithoutMigrations], which only
// check the version and refuse a schema that is behind with
// [ErrNotMigrated]. A schema migrated by a newer version of this package is
// refused with [ErrSchemaVersion]. Raw item JSON is kept as bytea, byte for byte. Session and run IDs
// are text: they must be valid UTF-8 without NUL bytes.
//
// Run checkpoints ([state.Store]) are saved as deltas ([state.Delta]): a
// save writes the run's head and the items recorded since the last save,
// in one statement (one round trip), so its cost does not grow with the
// run's history; checkpoints of the earlier whole-document format still
// load. [Store.SaveAppend] saves a checkpoint and appends to a session in
// one transaction. An append is one statement in one round trip, and with
// the save two statements in one round trip (the compare-and-swap, then
// the append, which writes only if it took), so a crash-safe tool turn
// makes two (the save before the call, then its commit).
//
// # Signed checkpoints
//
// [WithCodec] takes the same options as the WithCodec of every other
// checkpoint store (state/memstore, state/filestore, the other session
// backends), so every store is configured the same way. Signed with
// [state.WithSigningKey] and verified with [state.WithVerifyKeys], a
// checkpoint edited in the database (its run, its signature, its key ID,
// its items or context, an item row removed or added) fails to load with an
// error wrapping [state.ErrTampered]; during a key rotation sign with the
// new key and verify with the old and the new one:
//
//	store, err := postgres.Open(ctx, url, postgres.WithCodec(
//		[]state.MarshalOption{state.WithSigningKey("k2", newKey)},
//		[]state.UnmarshalOption{state.WithVerifyKeys(map[string][]byte{"k1": oldKey, "k2": newKey})},
//	))
//
// Session items are not signed.
package postgres
