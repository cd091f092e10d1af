package encrypt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/turnkit/turnkit/state"
)

// A KeyRecord is what a [KeyStore] keeps of a session's data key: the
// key wrapped by a key-encryption key, never the key itself.
type KeyRecord struct {
	ID      string `json:"id"`                // the data key's ID, written in every ciphertext it seals
	KEK     string `json:"kek,omitempty"`     // the key-encryption key it is wrapped under
	Wrapped []byte `json:"wrapped,omitempty"` // the wrapped data key; nil once shredded
	// Erased marks a session erased ([Store.Erase]): a tombstone that
	// refuses every later read and write of the session.
	Erased bool `json:"erased,omitempty"`
}

// equal reports whether two records are the same.
func (r KeyRecord) equal(o KeyRecord) bool {
	return r.ID == o.ID && r.KEK == o.KEK && bytes.Equal(r.Wrapped, o.Wrapped) && r.Erased == o.Erased
}

// A KeyStore keeps each session's [KeyRecord]. Create stores rec unless
// the session has one, and returns the stored record (rec, or the one
// another process stored first); Replace replaces old with rec if old is
// what is stored, and fails with an error wrapping [state.ErrConflict]
// otherwise; Delete removes the record. Get of a session without a
// record returns ok false.
//
// Crypto-shredding deletes a session's record: a copy of the data in a
// backup is unreadable once no copy of the record is left, so a store
// whose backups outlive the data's (the default, [KeysIn] the data's own
// store) shreds the live copy only; keep the records where backups are
// short-lived when backups must be covered. Implementations must be safe
// for concurrent use and honour ctx.
type KeyStore interface {
	Get(ctx context.Context, sessionID string) (rec KeyRecord, ok bool, err error)
	Create(ctx context.Context, sessionID string, rec KeyRecord) (KeyRecord, error)
	Replace(ctx context.Context, sessionID string, old, rec KeyRecord) error
	Delete(ctx context.Context, sessionID string) error
}

// KeyRunPrefix starts the run ID of the checkpoint a [KeysIn] key store
// keeps a session's key record in: KeyRunPrefix + the session ID.
const KeyRunPrefix = "turnkit.key/"

// keyExtension is the extension key of the record in a key run.
const keyExtension = "turnkit.data_key"

// KeysIn returns a [KeyStore] that keeps each session's record in st, as
// the checkpoint of a run named [KeyRunPrefix] + session ID (with no
// session, so that listings by session leave it out), with st's
// compare-and-swap for Create and Replace: every checkpoint store works,
// with no schema of its own. [Wrap] uses the wrapped store this way
// unless the keyring was given another ([WithKeyStore]).
func KeysIn(st state.Store) KeyStore {
	if st == nil {
		panic("encrypt: KeysIn called with a nil state.Store")
	}
	return stateKeys{st: st}
}

type stateKeys struct{ st state.Store }

func (k stateKeys) load(ctx context.Context, sessionID string) (*state.Run, KeyRecord, bool, error) {
	run, err := k.st.Load(ctx, KeyRunPrefix+sessionID)
	if errors.Is(err, state.ErrNotFound) {
		return nil, KeyRecord{}, false, nil
	}
	if err != nil {
		return nil, KeyRecord{}, false, err
	}
	raw, ok := run.Extension(keyExtension)
	var rec KeyRecord
	if !ok || json.Unmarshal(raw, &rec) != nil || rec.ID == "" {
		return nil, KeyRecord{}, false, fmt.Errorf("encrypt: key record of session %q is corrupt: %w", sessionID, ErrWrongKey)
	}
	return run, rec, true, nil
}

func (k stateKeys) Get(ctx context.Context, sessionID string) (KeyRecord, bool, error) {
	_, rec, ok, err := k.load(ctx, sessionID)
	return rec, ok, err
}

func (k stateKeys) Create(ctx context.Context, sessionID string, rec KeyRecord) (KeyRecord, error) {
	run := state.NewRun(KeyRunPrefix+sessionID, "turnkit.key")
	setRecord(run, rec)
	err := k.st.Save(ctx, run)
	if errors.Is(err, state.ErrConflict) {
		stored, ok, err := k.Get(ctx, sessionID)
		if err == nil && !ok {
			err = fmt.Errorf("encrypt: key record of session %q: created and deleted at once: %w", sessionID, state.ErrConflict)
		}
		return stored, err
	}
	if err != nil {
		return KeyRecord{}, err
	}
	return rec, nil
}

func (k stateKeys) Replace(ctx context.Context, sessionID string, old, rec KeyRecord) error {
	run, stored, ok, err := k.load(ctx, sessionID)
	if err != nil {
		return err
	}
	if !ok || !stored.equal(old) {
		return fmt.Errorf("encrypt: replace the key record of session %q: it changed: %w", sessionID, state.ErrConflict)
	}
	setRecord(run, rec)
	return k.st.Save(ctx, run)
}

func (k stateKeys) Delete(ctx context.Context, sessionID string) error {
	return k.st.Delete(ctx, KeyRunPrefix+sessionID)
}

func setRecord(run *state.Run, rec KeyRecord) {
	raw, _ := json.Marshal(rec) // strings, bytes and a bool: cannot fail
	run.SetExtension(keyExtension, raw)
}

// isKeyRun reports whether runID names a key store's run.
func isKeyRun(runID string) bool { return strings.HasPrefix(runID, KeyRunPrefix) }

// MemoryKeys returns a [KeyStore] in memory, for tests and for a keyring
// whose sessions live in memory too.
func MemoryKeys() KeyStore { return &memKeys{recs: make(map[string]KeyRecord)} }

type memKeys struct {
	mu   sync.Mutex
	recs map[string]KeyRecord
}

func (m *memKeys) Get(ctx context.Context, sessionID string) (KeyRecord, bool, error) {
	if err := ctx.Err(); err != nil {
		return KeyRecord{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.recs[sessionID]
	return rec, ok, nil
}

func (m *memKeys) Create(ctx context.Context, sessionID string, rec KeyRecord) (KeyRecord, error) {
	if err := ctx.Err(); err != nil {
		return KeyRecord{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if stored, ok := m.recs[sessionID]; ok {
		return stored, nil
	}
	m.recs[sessionID] = rec
	return rec, nil
}

func (m *memKeys) Replace(ctx context.Context, sessionID string, old, rec KeyRecord) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if stored, ok := m.recs[sessionID]; !ok || !stored.equal(old) {
		return fmt.Errorf("encrypt: replace the key record of session %q: it changed: %w", sessionID, state.ErrConflict)
	}
	m.recs[sessionID] = rec
	return nil
}

func (m *memKeys) Delete(ctx context.Context, sessionID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.recs, sessionID)
	return nil
}
