package encrypt

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// A KeyProvider wraps and unwraps data keys under key-encryption keys the
// application holds: a cloud KMS (its Encrypt and Decrypt with a key ID
// and an encryption context), an HSM, or a file ([NewFileProvider]).
//
// Wrap encrypts dataKey under the provider's current key-encryption key
// and returns that key's ID with the result; Unwrap decrypts a wrapped
// key with the key-encryption key kekID names. Both bind the wrapped key
// to sessionID (a KMS's encryption context or additional data), so that
// a record moved to another session fails to unwrap. After a rotation
// (a new current key) Unwrap must still accept the keys that earlier
// wraps named, until [Store.Rotate] re-wrapped every record. Neither
// may keep dataKey or the result. Implementations must be safe for
// concurrent use and honour ctx.
type KeyProvider interface {
	Wrap(ctx context.Context, sessionID string, dataKey []byte) (kekID string, wrapped []byte, err error)
	Unwrap(ctx context.Context, sessionID, kekID string, wrapped []byte) ([]byte, error)
}

// A MemoryProvider is a [KeyProvider] over key-encryption keys held in
// memory, for tests: AES-256-GCM under the current key. It is safe for
// concurrent use.
type MemoryProvider struct {
	mu      sync.RWMutex
	current string
	keks    map[string]cipher.AEAD
}

var _ KeyProvider = (*MemoryProvider)(nil)

// NewMemoryProvider returns a provider whose current key-encryption key
// is a new random one named id.
func NewMemoryProvider(id string) *MemoryProvider {
	p := &MemoryProvider{keks: make(map[string]cipher.AEAD)}
	p.Rotate(id)
	return p
}

// Rotate adds a new random key-encryption key named id and makes it the
// current one; the earlier keys still unwrap. An id already present is
// made current again.
func (p *MemoryProvider) Rotate(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.keks[id]; !ok {
		p.keks[id] = mustAEAD(randomKey())
	}
	p.current = id
}

// Forget drops the key-encryption key named id: what it wrapped no
// longer unwraps (an operator disabling a KMS key).
func (p *MemoryProvider) Forget(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.keks, id)
}

// Wrap seals dataKey under the current key.
func (p *MemoryProvider) Wrap(ctx context.Context, sessionID string, dataKey []byte) (string, []byte, error) {
	p.mu.RLock()
	id, a := p.current, p.keks[p.current]
	p.mu.RUnlock()
	return id, wrapWith(a, id, sessionID, dataKey), nil
}

// Unwrap opens a key Wrap returned.
func (p *MemoryProvider) Unwrap(ctx context.Context, sessionID, kekID string, wrapped []byte) ([]byte, error) {
	p.mu.RLock()
	a, ok := p.keks[kekID]
	p.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("encrypt: unknown key-encryption key %q: %w", kekID, ErrWrongKey)
	}
	return unwrapWith(a, kekID, sessionID, wrapped)
}

// A FileProvider is a [KeyProvider] over key-encryption keys kept in
// files, one per key: the file <dir>/<id>.key holds the key, 32 bytes in
// standard base64. It is an example of a provider, for a single machine;
// in production a KMS holds the keys and never hands them out.
type FileProvider struct {
	current string
	keks    map[string]cipher.AEAD
}

var _ KeyProvider = (*FileProvider)(nil)

// NewFileProvider reads every <id>.key file in dir and returns a provider
// that wraps under the key named current and unwraps under any of them.
// A key file that is not 32 bytes of base64, or a current key without a
// file, is an error.
func NewFileProvider(dir, current string) (*FileProvider, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.key"))
	if err != nil {
		return nil, fmt.Errorf("encrypt: key files in %q: %w", dir, err)
	}
	p := &FileProvider{current: current, keks: make(map[string]cipher.AEAD, len(names))}
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("encrypt: key file: %w", err)
		}
		key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(data)))
		if err != nil || len(key) != 32 {
			return nil, fmt.Errorf("encrypt: key file %q: want 32 bytes in base64", name)
		}
		p.keks[strings.TrimSuffix(filepath.Base(name), ".key")] = mustAEAD(key)
	}
	if _, ok := p.keks[current]; !ok {
		return nil, fmt.Errorf("encrypt: no key file %q for the current key in %q", current+".key", dir)
	}
	return p, nil
}

// WriteKeyFile writes a new random key-encryption key named id to
// <dir>/<id>.key, readable by its owner only, and fails if it exists.
func WriteKeyFile(dir, id string) error {
	f, err := os.OpenFile(filepath.Join(dir, id+".key"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("encrypt: write key file: %w", err)
	}
	_, err = f.WriteString(base64.StdEncoding.EncodeToString(randomKey()) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("encrypt: write key file: %w", err)
	}
	return nil
}

// Wrap seals dataKey under the current key.
func (p *FileProvider) Wrap(ctx context.Context, sessionID string, dataKey []byte) (string, []byte, error) {
	return p.current, wrapWith(p.keks[p.current], p.current, sessionID, dataKey), nil
}

// Unwrap opens a key Wrap returned.
func (p *FileProvider) Unwrap(ctx context.Context, sessionID, kekID string, wrapped []byte) ([]byte, error) {
	a, ok := p.keks[kekID]
	if !ok {
		return nil, fmt.Errorf("encrypt: no key file for key-encryption key %q: %w", kekID, ErrWrongKey)
	}
	return unwrapWith(a, kekID, sessionID, wrapped)
}

// wrapWith seals dataKey with a, bound to the key's ID and the session.
func wrapWith(a cipher.AEAD, kekID, sessionID string, dataKey []byte) []byte {
	nonce := make([]byte, a.NonceSize(), a.NonceSize()+len(dataKey)+a.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		panic("encrypt: crypto/rand failed: " + err.Error()) // crypto/rand does not fail on supported systems
	}
	return a.Seal(nonce, nonce, dataKey, wrapAD(kekID, sessionID))
}

// unwrapWith opens what wrapWith sealed.
func unwrapWith(a cipher.AEAD, kekID, sessionID string, wrapped []byte) ([]byte, error) {
	if len(wrapped) < a.NonceSize() {
		return nil, fmt.Errorf("encrypt: wrapped key too short: %w", ErrWrongKey)
	}
	key, err := a.Open(nil, wrapped[:a.NonceSize()], wrapped[a.NonceSize():], wrapAD(kekID, sessionID))
	if err != nil {
		return nil, fmt.Errorf("encrypt: data key does not unwrap under %q: %w", kekID, ErrWrongKey)
	}
	return key, nil
}

func wrapAD(kekID, sessionID string) []byte {
	return appendField(appendField([]byte("turnkit.wrap.v1"), kekID), sessionID)
}

// randomKey returns 32 random bytes.
func randomKey() []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		panic("encrypt: crypto/rand failed: " + err.Error())
	}
	return k
}

// mustAEAD returns AES-GCM under a 32-byte key.
func mustAEAD(key []byte) cipher.AEAD {
	b, err := aes.NewCipher(key)
	if err != nil {
		panic(errors.New("encrypt: " + err.Error())) // a 32-byte key always makes a cipher
	}
	a, err := cipher.NewGCM(b)
	if err != nil {
		panic(errors.New("encrypt: " + err.Error()))
	}
	return a
}
