// Package redis provides a [session.Store] in Redis, through go-redis v9,
// for many workers sharing sessions and checkpoints.
//
//	store, err := redis.Open(ctx, "redis://localhost:6379/0")
//	if err != nil {
//		return err
//	}
//	defer store.Close()
//	runner := pipeline.NewRunner(pipeline.WithMiddleware(persistence.Middleware(store)))
//
// [New] takes a client the caller owns instead (a cluster client works).
//
// # Layout
//
// A session is three keys under one hash tag, prefix+"session:{"+ID+"}":
// ":items", a sorted set with every score 0 whose members are the item's
// position (16 hex digits of the run's place, 16 of its Seq) followed by
// the encoded item, so that Redis orders them byte-wise by (place, Seq)
// exactly, with no float64 score to overflow; ":runs", a hash from run ID to
// place; and ":places", the counter that hands out places.
//
// # Atomicity
//
// Append is one Lua script (EVALSHA): it compares every item of the batch
// with what is stored at its position, and writes only if none differs, so
// a batch is stored whole or rejected whole with [session.ErrConflict], and
// a retry is a no-op. List is one ZRANGE, Pop one ZPOPMAX, Clear one DEL.
// Durability is the server's: configure AOF (appendfsync everysec or
// always) if sessions must survive a Redis restart.
//
// # Signed checkpoints
//
// [WithCodec] takes the options of [state.WithCodec], so every store is
// configured the same way. Signed with [state.WithSigningKey] and verified
// with [state.WithVerifyKeys], a checkpoint edited in the database (its
// run, its signature, its key ID) fails to load with an error wrapping
// [state.ErrTampered]; during a key rotation sign with the new key and
// verify with the old and the new one:
//
//	store, err := redis.Open(ctx, url, redis.WithCodec(
//		[]state.MarshalOption{state.WithSigningKey("k2", newKey)},
//		[]state.UnmarshalOption{state.WithVerifyKeys(map[string][]byte{"k1": oldKey, "k2": newKey})},
//	))
//
// Session items are not signed.
package redis
