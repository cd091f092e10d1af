package encrypt

import (
	"container/list"
	"context"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"sync"
	"time"

	"github.com/turnkit/turnkit/internal/prefixed"
	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// A Keyring holds the [KeyProvider], the [KeyStore] of the sessions' data
// keys, and a bounded cache of the data keys in use (unwrapped, in
// memory only). One keyring serves every wrapper of one set of data: give
// its [Keyring.Codec] to the checkpoint store and wrap the store with it
// ([Wrap]). It is safe for concurrent use.
type Keyring struct {
	provider KeyProvider
	max      int
	ttl      time.Duration

	mu    sync.Mutex
	keys  KeyStore
	lru   *list.List // of *dataKey, most recently used first
	cache map[string]*list.Element
}

// An Option configures a [Keyring].
type Option interface{ apply(*Keyring) }

type optionFunc func(*Keyring)

func (f optionFunc) apply(k *Keyring) { f(k) }

// WithKeyStore sets where the sessions' key records are kept. The default
// is the checkpoint store first given to [Wrap] or [WrapRuns] ([KeysIn]);
// a keyring wrapping only sessions needs one. A nil ks is ignored.
func WithKeyStore(ks KeyStore) Option {
	return optionFunc(func(k *Keyring) {
		if ks != nil {
			k.keys = ks
		}
	})
}

// WithCacheSize sets how many sessions' data keys the keyring keeps
// unwrapped in memory (default 4096): past it, the least recently used
// is dropped and unwrapped again on its next use. n < 1 is ignored.
func WithCacheSize(n int) Option {
	return optionFunc(func(k *Keyring) {
		if n >= 1 {
			k.max = n
		}
	})
}

// WithCacheTTL sets how long a cached data key is used before its record
// is read again (default one minute), which bounds how long another
// process may keep writing to a session this one erased or re-keyed.
// d <= 0 is ignored.
func WithCacheTTL(d time.Duration) Option {
	return optionFunc(func(k *Keyring) {
		if d > 0 {
			k.ttl = d
		}
	})
}

// NewKeyring returns a keyring over provider. It panics on a nil
// provider: a wiring mistake.
func NewKeyring(provider KeyProvider, opts ...Option) *Keyring {
	if provider == nil {
		panic("encrypt: NewKeyring called with a nil KeyProvider")
	}
	k := &Keyring{provider: provider, max: 4096, ttl: time.Minute, lru: list.New(), cache: make(map[string]*list.Element)}
	for _, o := range opts {
		if o != nil {
			o.apply(k)
		}
	}
	return k
}

// Codec returns the options a checkpoint store seals and opens its
// checkpoints with: pass them to its WithCodec, as in
// sqlite.WithCodec(kr.Codec()). They may be combined with signing
// options: a signed head is signed, then sealed.
func (k *Keyring) Codec() ([]state.MarshalOption, []state.UnmarshalOption) {
	o := state.WithSealer(k)
	return []state.MarshalOption{o}, []state.UnmarshalOption{o}
}

// bindKeys sets the keyring's key store to ks unless it has one.
func (k *Keyring) bindKeys(ks KeyStore) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.keys == nil {
		k.keys = ks
	}
}

func (k *Keyring) keyStore() (KeyStore, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.keys == nil {
		return nil, errors.New("encrypt: the keyring has no key store: give it WithKeyStore, or wrap a checkpoint store with it")
	}
	return k.keys, nil
}

// A dataKey is a session's data key, unwrapped.
type dataKey struct {
	sid     string
	id      [8]byte
	aead    cipher.AEAD
	scratch sync.Pool // of *scratch, each with its HMAC under the nonce key
	erased  bool      // the session's record is a tombstone
	expires time.Time
}

// A scratch is what one seal or open works in, reused from a pool so that
// sealing allocates only what it returns.
type scratch struct {
	mac hash.Hash
	sum [sha256.Size]byte
	n   [8]byte
	ad  []byte // additional data
	raw []byte // an item's JSON
	out []byte // an item's sealed JSON
	ct  []byte // a ciphertext
}

func (dk *dataKey) get() *scratch { return dk.scratch.Get().(*scratch) }

// put returns sc to the pool unless it grew past what is worth keeping.
func (dk *dataKey) put(sc *scratch) {
	if cap(sc.raw)+cap(sc.out)+cap(sc.ct) <= 1<<16 {
		dk.scratch.Put(sc)
	}
}

func newDataKey(sid string, rec KeyRecord, dek []byte) (*dataKey, error) {
	id, err := hex.DecodeString(rec.ID)
	if err != nil || len(id) != 8 || len(dek) != 32 {
		return nil, &SealError{SessionID: sid, What: "data key", Err: fmt.Errorf("malformed key record: %w", ErrWrongKey)}
	}
	dk := &dataKey{sid: sid, aead: mustAEAD(derive(dek, "turnkit.enc"))}
	copy(dk.id[:], id)
	nk := derive(dek, "turnkit.nonce")
	dk.scratch.New = func() any { return &scratch{mac: hmac.New(sha256.New, nk)} }
	return dk, nil
}

// derive returns a subkey of dek for one use.
func derive(dek []byte, label string) []byte {
	m := hmac.New(sha256.New, dek)
	m.Write([]byte(label))
	return m.Sum(nil)
}

// The layout of a ciphertext: a format byte, the data key's ID, the
// nonce, then AES-GCM's output.
const (
	formatClear  = 0 // a key run's parts: stored as they are (keystore.go)
	formatSealed = 1
	headerLen    = 1 + 8 + 12
)

// seal appends the ciphertext of plaintext bound to ad to dst. The nonce
// is synthetic (an HMAC of ad and plaintext under a subkey of the data
// key): the same item at the same position seals to the same bytes, so a
// retried append is recognized as such by the store, and nonces of
// distinct inputs collide with probability 2^-96.
func (dk *dataKey) seal(sc *scratch, dst, ad, plaintext []byte) []byte {
	m := sc.mac
	m.Reset()
	binary.BigEndian.PutUint64(sc.n[:], uint64(len(ad)))
	m.Write(sc.n[:])
	m.Write(ad)
	m.Write(plaintext)
	m.Sum(sc.sum[:0])
	dst = append(dst, formatSealed)
	dst = append(dst, dk.id[:]...)
	dst = append(dst, sc.sum[:12]...)
	return dk.aead.Seal(dst, dst[len(dst)-12:], plaintext, ad)
}

// open returns the plaintext of a ciphertext seal made, bound to ad;
// with inPlace it decrypts over blob, which the caller no longer needs.
func (dk *dataKey) open(dst []byte, inPlace bool, ad, blob []byte) ([]byte, error) {
	switch {
	case len(blob) > 0 && blob[0] == formatClear:
		return nil, ErrUnsealed
	case len(blob) < headerLen+dk.aead.Overhead() || blob[0] != formatSealed:
		return nil, ErrTampered
	case [8]byte(blob[1:9]) != dk.id:
		return nil, fmt.Errorf("sealed under data key %x, the session's is %x: %w", blob[1:9], dk.id, ErrWrongKey)
	}
	if inPlace {
		dst = blob[headerLen:headerLen]
	}
	pt, err := dk.aead.Open(dst, blob[9:headerLen], blob[headerLen:], ad)
	if err != nil {
		return nil, ErrTampered
	}
	return pt, nil
}

// cached returns the session's cached data key, or nil.
func (k *Keyring) cached(sid string) *dataKey {
	k.mu.Lock()
	defer k.mu.Unlock()
	e, ok := k.cache[sid]
	if !ok {
		return nil
	}
	dk := e.Value.(*dataKey)
	if time.Now().After(dk.expires) {
		k.lru.Remove(e)
		delete(k.cache, sid)
		return nil
	}
	k.lru.MoveToFront(e)
	return dk
}

// put caches dk, dropping the least recently used key past the bound.
func (k *Keyring) put(dk *dataKey) {
	dk.expires = time.Now().Add(k.ttl)
	k.mu.Lock()
	defer k.mu.Unlock()
	if e, ok := k.cache[dk.sid]; ok {
		e.Value = dk
		k.lru.MoveToFront(e)
		return
	}
	k.cache[dk.sid] = k.lru.PushFront(dk)
	for k.lru.Len() > k.max {
		old := k.lru.Back()
		k.lru.Remove(old)
		delete(k.cache, old.Value.(*dataKey).sid)
	}
}

// forget drops the session's cached key.
func (k *Keyring) forget(sid string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if e, ok := k.cache[sid]; ok {
		k.lru.Remove(e)
		delete(k.cache, sid)
	}
}

// key returns the session's data key: cached, or read from the key store
// and unwrapped; with create, a session without one gets a new one. An
// erased session fails with [ErrErased], one without a key (create
// false, or shredded) with [ErrNoKey].
func (k *Keyring) key(ctx context.Context, sid string, create bool) (*dataKey, error) {
	if dk := k.cached(sid); dk != nil {
		if dk.erased {
			return nil, &SealError{SessionID: sid, What: "data key", Err: ErrErased}
		}
		return dk, nil
	}
	ks, err := k.keyStore()
	if err != nil {
		return nil, err
	}
	rec, ok, err := ks.Get(ctx, sid)
	if err != nil {
		return nil, &SealError{SessionID: sid, What: "data key", Err: err}
	}
	var dek []byte
	if !ok {
		if !create {
			return nil, &SealError{SessionID: sid, What: "data key", Err: ErrNoKey}
		}
		if rec, dek, err = k.create(ctx, ks, sid); err != nil {
			return nil, &SealError{SessionID: sid, What: "data key", Err: err}
		}
	}
	switch {
	case rec.Erased:
		k.put(&dataKey{sid: sid, erased: true})
		return nil, &SealError{SessionID: sid, What: "data key", Err: ErrErased}
	case rec.Wrapped == nil:
		return nil, &SealError{SessionID: sid, What: "data key", Err: ErrNoKey}
	case dek == nil:
		if dek, err = k.provider.Unwrap(ctx, sid, rec.KEK, rec.Wrapped); err != nil {
			return nil, &SealError{SessionID: sid, What: "data key", Err: err}
		}
	}
	dk, err := newDataKey(sid, rec, dek)
	if err != nil {
		return nil, err
	}
	k.put(dk)
	return dk, nil
}

// create makes the session a new data key, or returns the one another
// process stored first, with the key unwrapped when it is this one.
func (k *Keyring) create(ctx context.Context, ks KeyStore, sid string) (KeyRecord, []byte, error) {
	dek := randomKey()
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return KeyRecord{}, nil, err
	}
	kek, wrapped, err := k.provider.Wrap(ctx, sid, dek)
	if err != nil {
		return KeyRecord{}, nil, err
	}
	rec := KeyRecord{ID: hex.EncodeToString(id[:]), KEK: kek, Wrapped: wrapped}
	stored, err := ks.Create(ctx, sid, rec)
	if err != nil {
		return KeyRecord{}, nil, err
	}
	if stored.ID != rec.ID {
		return stored, nil, nil // another process's: unwrap it
	}
	return stored, dek, nil
}

// Rotate re-wraps the session's data key under the provider's current
// key-encryption key and replaces its record, so that the earlier
// key-encryption key can be retired; no item or checkpoint is rewritten,
// since the data key stays the same. It reports whether the record
// changed (false for a session without a live key). A record changed by
// another process meanwhile fails with an error wrapping
// [state.ErrConflict]: try again.
func (k *Keyring) Rotate(ctx context.Context, sessionID string) (bool, error) {
	ks, err := k.keyStore()
	if err != nil {
		return false, err
	}
	rec, ok, err := ks.Get(ctx, sessionID)
	if err != nil || !ok || rec.Erased || rec.Wrapped == nil {
		return false, err
	}
	dek, err := k.provider.Unwrap(ctx, sessionID, rec.KEK, rec.Wrapped)
	if err != nil {
		return false, &SealError{SessionID: sessionID, What: "data key", Err: err}
	}
	kek, wrapped, err := k.provider.Wrap(ctx, sessionID, dek)
	if err != nil {
		return false, &SealError{SessionID: sessionID, What: "data key", Err: err}
	}
	next := KeyRecord{ID: rec.ID, KEK: kek, Wrapped: wrapped}
	if err := ks.Replace(ctx, sessionID, rec, next); err != nil {
		return false, err
	}
	return true, nil
}

var _ state.Sealer = (*Keyring)(nil)

// Seal seals a part of a checkpoint under its session's data key, which
// must be loaded ([Wrap]'s Save loads it). A key store's own runs
// ([KeysIn]) are kept as they are: they hold wrapped keys only.
func (k *Keyring) Seal(dst []byte, p state.Part, plaintext []byte) ([]byte, error) {
	if isKeyRun(p.RunID) {
		return append(append(dst, formatClear), plaintext...), nil
	}
	dk := k.cached(p.SessionID)
	if dk == nil || dk.erased {
		return nil, &notLoadedError{sessionID: p.SessionID}
	}
	sc := dk.get()
	sc.ad = partAD(sc.ad[:0], p)
	dst = dk.seal(sc, dst, sc.ad, plaintext)
	dk.put(sc)
	return dst, nil
}

// Open opens what Seal sealed for the same part.
func (k *Keyring) Open(dst []byte, p state.Part, sealed []byte) ([]byte, error) {
	if isKeyRun(p.RunID) {
		if len(sealed) == 0 || sealed[0] != formatClear {
			return nil, &SealError{SessionID: p.SessionID, RunID: p.RunID, What: p.Kind.String(), Err: ErrTampered}
		}
		return append(dst, sealed[1:]...), nil
	}
	dk := k.cached(p.SessionID)
	if dk == nil || dk.erased {
		return nil, &notLoadedError{sessionID: p.SessionID}
	}
	sc := dk.get()
	sc.ad = partAD(sc.ad[:0], p)
	pt, err := dk.open(dst, false, sc.ad, sealed)
	dk.put(sc)
	if err != nil {
		return nil, &SealError{SessionID: p.SessionID, RunID: p.RunID, What: p.Kind.String(), Seq: p.Seq, Err: err}
	}
	return pt, nil
}

// partAD appends the additional data of a checkpoint's part to ad.
func partAD(ad []byte, p state.Part) []byte {
	ad = append(ad, "turnkit.part.v1"...)
	ad = appendField(ad, p.SessionID)
	ad = appendField(ad, p.RunID)
	ad = append(ad, byte(p.Kind))
	ad = binary.BigEndian.AppendUint64(ad, uint64(p.Seq))
	ad = binary.BigEndian.AppendUint64(ad, uint64(p.Version))
	return binary.BigEndian.AppendUint64(ad, uint64(p.Full))
}

// appendField appends s with its length before it, so that no two lists
// of fields share an encoding.
func appendField(dst []byte, s string) []byte {
	return prefixed.Append(dst, s)
}

// RotateAll re-wraps the data keys of every session the backend lists
// ([session.Lister]; the sessions of persistence's marks are sessions
// too) and the key of runs without a session, with [Keyring.Rotate],
// reading the session list a page at a time; it returns how many
// records changed. A record changed by another process meanwhile is
// tried again once. Retire the old key-encryption key once it returned
// nil: no record names it any more (records created by other processes
// during the rotation are wrapped by the current key already).
func (s *Store) RotateAll(ctx context.Context) (int, error) {
	n := 0
	rotate := func(sid string) error {
		changed, err := s.kr.Rotate(ctx, sid)
		if errors.Is(err, state.ErrConflict) {
			changed, err = s.kr.Rotate(ctx, sid)
		}
		if changed {
			n++
		}
		return err
	}
	if err := rotate(""); err != nil {
		return n, err
	}
	q := session.SessionQuery{Limit: session.MaxPageLimit}
	for {
		page, err := s.ListSessions(ctx, q)
		if err != nil {
			return n, err
		}
		for _, sid := range page.IDs {
			if err := rotate(sid); err != nil {
				return n, err
			}
		}
		if page.Next == "" {
			return n, nil
		}
		q.Cursor = page.Next
	}
}
