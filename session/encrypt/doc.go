// Package encrypt keeps sessions and checkpoints encrypted at rest, on
// every backend: AES-256-GCM under a data key per session, each data key
// wrapped by a key-encryption key of a [KeyProvider] the application
// implements (a cloud KMS fits: wrap and unwrap with key IDs).
//
//	kr := encrypt.NewKeyring(provider)
//	db, err := sqlite.Open(path, sqlite.WithCodec(kr.Codec())) // seals checkpoints
//	store := encrypt.Wrap(db, kr)                               // seals items, loads keys
//	// store is a session.Store and a state.Store, with SaveAppend:
//	// use it wherever db was used (persistence, checkpoint, inspect).
//
// # What is sealed, what stays in the clear
//
// Everything a user or a tool said is sealed: every item's JSON (message
// text, call arguments, outputs, reasoning) and, in checkpoints, the
// head (input, pending approvals and their arguments, decisions,
// guardrail results, usage), every piece and the context. What the
// stores index and check stays in the clear, so that every store keeps
// its indexes, its idempotent appends, its one-output-per-call check,
// its compare-and-swap and its listings without a change: session and
// run IDs, positions, item kinds, call IDs, tool names, a run's version,
// status, turn, agent and pending count (an item's ID and role too in the
// JSON form; the binary form leaves them to its ciphertext, as no store
// reads them).
//
// # Design: a codec hook and a wrapper
//
// The checkpoint stores build what they write from [state.Run.Delta] and
// read it back with [state.Assemble], with the options of their
// WithCodec; [state.WithSealer] is a hook there, so the keyring's
// [Keyring.Codec] seals each part of a delta (head, pieces, context)
// after it is built and signed, and opens it before anything is read.
// No store changes, and the five checkpoint stores (state/memstore,
// state/filestore, SQLite, PostgreSQL, Redis) seal alike. SQLite,
// PostgreSQL and Redis keep a sealed piece or context as its ciphertext
// bytes, and the head as bytes too, its routing fields in the clear
// before its ciphertext ([state.WithBinaryParts]); state/filestore,
// which keeps pieces inside JSON, and state/memstore keep a JSON string
// of its base64, and the head as JSON. A checkpoint opens in either
// form, so one sealed before binary parts still does. Session items
// are rewritten by a wrapper instead ([Wrap], [WrapSessions]): an item
// becomes an item of the same kind whose JSON keeps its routing members
// and carries the whole item sealed in one more member. A codec hook in
// each session store would have touched four stores' append paths (and
// their schemas' consumers); the wrapper touches none.
//
// SQLite, PostgreSQL and Redis have that hook too (WithItemCodec), for its
// cost: given the keyring as its item codec, the store seals each item as
// it builds its insert and opens each row it reads before its one parse,
// where the wrapper builds a sealed item (its JSON copied and parsed) per
// item written and parses each sealed row before opening it. Wrap sees
// the hook and leaves the items to the store. Such a store keeps an item
// sealed as bytes, not as JSON: a format byte, the run's ID in the clear,
// then the ciphertext of the item's JSON ([Keyring.SealItem]), 166 bytes
// and the run's ID for an item of 129 bytes of JSON, where the JSON form
// takes about 330. The item codec still opens the JSON form, which the
// wrapper alone writes and the item codec wrote before, so a database
// written either way reads with it; the wrapper alone does not read the
// binary form (its store fails with session.ErrCorrupt). PostgreSQL and
// Redis recognize a retried append by its stored bytes: an append stored
// in one form and retried in the other (across an upgrade, or a switch
// to the item codec) is a conflict there; SQLite opens and compares. On
// SQLite the item codec saves 6 allocations per tool turn with
// persistence (as many as SQLite plain) and 8 crash-safe:
//
//	db, err := sqlite.Open(path, sqlite.WithCodec(kr.Codec()), sqlite.WithItemCodec(kr))
//	db, err := postgres.New(ctx, pool, postgres.WithCodec(kr.Codec()), postgres.WithItemCodec(kr))
//	db := redis.New(client, redis.WithCodec(kr.Codec()), redis.WithItemCodec(kr))
//
// The wrappers read changes ([session.ChangeReader]) through the inner
// store, opening the items read, so persistence's history cache works on
// a sealed store as on a plain one: a message opens only the items
// written since the last, not the whole history.
//
// # Binding
//
// Each ciphertext's additional data is its session, and for an item its
// position, kind, tool name and run (in the JSON form, its clear
// members, which name the run); for a checkpoint part its run, kind of
// part, position and version. An item's routing members (call ID, item
// ID, role and the like) are inside its ciphertext only in the binary
// form: the stores index and check the columns they write beside it
// (kind, tool name, call ID), not its bytes, so nothing reads them in
// the clear; the binding is unchanged for what the additional data
// holds, and what moved into the ciphertext is authenticated with it.
// A row
// moved to another session, run or position, a ciphertext or a clear
// member edited, fails with [ErrTampered]; data sealed under another data
// key with [ErrWrongKey]; plaintext where ciphertext is expected with
// [ErrUnsealed]: each inside a [*SealError] that says where. Nothing
// unauthenticated reaches the model.
//
// The nonce is synthetic (an HMAC of the additional data and the
// plaintext under a subkey of the data key), so the same item at the
// same position seals to the same bytes: a retried append is still
// recognized by the store as a retry, and an append of a different item
// there still conflicts.
//
// # Nonces: why synthetic, and why that is safe
//
// AES-GCM fails badly when one key seals two different plaintexts under
// one nonce (their XOR and the authentication key leak), and a save or
// append retried after an ambiguous failure (the first write may or may
// not have landed, and may sit in a log or a replica) seals again what it
// sealed before. So the nonce is the first 12 bytes of HMAC-SHA256, under
// a subkey of the data key ("turnkit.nonce", apart from the encryption
// subkey "turnkit.enc"), of the additional data's length, the
// additional data and the plaintext: a synthetic IV, as SIV (RFC 5297)
// derives one, given to GCM as its nonce. The argument:
//   - equal inputs (the same part of the same session, run, position,
//     version, with the same plaintext) give the same nonce and the same
//     ciphertext, which reveals only that they are equal: that is what a
//     retry writes, and what the store's idempotence compares;
//   - distinct inputs give nonces that, HMAC being a PRF under a key the
//     attacker does not hold, collide with probability at most
//     q²/2^97 over q seals under one data key: a session would need about
//     2^32 seals for 2^-33, and each session has its own data key;
//   - no counter or clock is kept, so several processes sealing under one
//     data key (any worker resumes any run) need no coordination.
//
// A random nonce (crypto/rand per seal, or a counter under a random
// prefix) would give up the first point, which retried appends rely on,
// and cost as much: profiled on a crash-safe tool turn on SQLite, all of
// the sealing (HMAC and AES-GCM both) is about 2% of the turn's CPU, the
// HMAC under half of that, the rest being SQLite's.
//
// # Keys
//
// A session's first write creates its data key (32 random bytes), wraps
// it with the provider and stores the record in a [KeyStore]: by default
// the wrapped checkpoint store itself, as a checkpoint named
// [KeyRunPrefix] + session ID ([KeysIn]), so every backend keeps keys
// with no schema of its own; [WithKeyStore] puts them elsewhere. Keys in
// use are cached unwrapped in memory, bounded ([WithCacheSize]) and
// re-read after [WithCacheTTL]. [Keyring.Rotate] re-wraps a session's
// data key under the provider's current key-encryption key, and
// [Store.RotateAll] every session's: no item or checkpoint is rewritten.
//
// # Signing
//
// Signing ([state.WithSigningKey], [state.WithVerifyKeys]) works on top:
// give the store both the signing options and the keyring's codec; a
// head is signed, then sealed, and on load opened, then verified.
//
// # Erasure
//
// [Store.Erase] deletes everything a session left behind on its backend
// (items, marks, its runs' checkpoints with their pieces, contexts and
// listing entries), scrubs a backend that keeps deleted bytes in its
// files ([Scrubber]: session/sqlite), reports the counts, and leaves a
// tombstone in the session's key record, so that a paused run of the
// session fails on resume; with [Shred] the tombstone keeps no key, and
// copies of the ciphertexts elsewhere (backups, replicas, PostgreSQL's
// dead tuples until VACUUM, Redis's AOF until a rewrite) can no longer be
// read once no copy of the key record is left. [Erase] is the same for
// plain stores, without tombstone. Copies outside the stores are the
// application's to erase: River's job table (a riverrun start job carries
// the run's input in the clear), which riverrun's Client.Erase clears,
// and traces or logs with content capture on.
package encrypt
