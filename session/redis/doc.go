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
// [New] takes a client the caller owns instead: goredis.NewClient,
// NewFailoverClient, or NewClusterClient for a Redis Cluster (tested on a
// 3-node cluster in CI).
//
// # Layout
//
// A session's keys share one hash tag, prefix+"session:{"+ID+"}":
// ":items", a sorted set with every score 0 whose members are the item's
// position (16 hex digits of the run's place, 16 of its Seq) followed by
// the encoded item, so that Redis orders them byte-wise by (place, Seq)
// exactly, with no float64 score to overflow; ":runs", a hash from run ID to
// place; ":places", the counter that hands out places; ":calls" and
// ":outputs", the index of tool calls and the outputs that answer them
// (one output per call); ":stamps" and ":stamp", each item's write stamp
// and their counter ([Store.ReadChanges]); and ":gen", the generation that
// Pop and Clear move on.
//
// A store remembers the place of each run it appended to (in memory, at
// most 4 096 runs). The next batch of that run, when it is the common one
// (its Seqs ascending, each output after its call), goes to the append
// script with every member, position and index entry already joined to
// that place, and the script checks that the place is still the run's and
// that nothing of the run is stored at or after the batch before it
// writes them; otherwise it writes nothing, and the store sends the batch
// again for the script to place and check itself, as it does for a run
// it is not told the place of. What is stored is the same either way.
//
// # Rolling upgrades
//
// Processes of this version and of the earlier one can share a server
// (or a cluster) during a rolling upgrade, both ways: neither the keys nor
// what they hold changed with the remembered places, each process runs
// its own scripts (EVALSHA by their own digests), and a place one process
// remembers is checked against the session by the script on every append,
// so a session cleared or written by a process of the other version (a
// run placed anew) is appended to at the place Redis holds.
// TestRollingUpgrade (the earlier script writing, this version reading,
// appending and saving, and the reverse) holds this.
//
// A run's checkpoint is three keys under prefix+"checkpoint:{"+ID+"}" (a
// [state.Delta] each save): that key, a hash with fields "v" (the
// version), "d" (the head: the run's small mutable part, signed when the
// store signs) and, on a standalone server, "s" (the run's serial in the
// listing of runs, so that a save that leaves the run under its status
// and session writes its summary without reading it; a head an earlier
// version wrote gets it at its next save); ":items", a hash from each
// item's Seq (decimal) to
// "<version of the save that wrote it>:<item JSON>"; and ":context", the
// context the run's items follow (the session history it started from),
// written about once a run. A save writes the head and only the items
// recorded since the last save: O(its new items), whatever the history.
// Load reads the three keys in one MULTI/EXEC and rebuilds the run with
// [state.Assemble]. A checkpoint written by an earlier version of this
// package (the whole checkpoint in "d") loads as it is; its next save
// rewrites it in this layout.
//
// In a Redis Cluster a session's keys, and a run's, share one hash slot.
// An ID with a "{" or "}" would cut short or empty the hash tag, so it is
// escaped in its keys ("%" as "%25", "{" as "%7B", "}" as "%7D", under
// "session%:" or "checkpoint%:" instead of "session:" or "checkpoint:");
// IDs without braces keep the keys above. A [WithPrefix] prefix should hold
// no braces.
//
// # Atomicity
//
// Append is one Lua script (EVALSHA): it compares every item of the batch
// with what is stored at its position, and writes only if none differs, so
// a batch is stored whole or rejected whole with [session.ErrConflict], and
// a retry is a no-op. List is one ZRANGE, Pop one ZPOPMAX, Clear one DEL.
// A checkpoint save is one Lua script (compare the version, then write),
// and [Store.SaveAppend] saves a checkpoint and appends to a session in one
// script on a standalone server (in a Redis Cluster, where the two are in
// different slots, it saves, then appends).
// Durability is the server's: configure AOF (appendfsync everysec or
// always) if sessions must survive a Redis restart.
//
// # Signed checkpoints
//
// [WithCodec] takes the same options as the WithCodec of every other
// checkpoint store (state/memstore, state/filestore, the other session
// backends), so every store is configured the same way. Signed with
// [state.WithSigningKey] and verified with [state.WithVerifyKeys], a
// checkpoint edited in the database (its run, its signature, its key ID)
// fails to load with an error wrapping [state.ErrTampered]; during a key
// rotation sign with the new key and verify with the old and the new one:
//
//	store, err := redis.Open(ctx, url, redis.WithCodec(
//		[]state.MarshalOption{state.WithSigningKey("k2", newKey)},
//		[]state.UnmarshalOption{state.WithVerifyKeys(map[string][]byte{"k1": oldKey, "k2": newKey})},
//	))
//
// Session items are not signed.
package redis
