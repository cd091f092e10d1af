package encrypt

import (
	"errors"
	"fmt"

	"github.com/turnkit/turnkit/state"
)

// Errors of reading and writing sealed data. Each is wrapped by a
// [*SealError] that says where; a checkpoint's arrives wrapped in the
// store's [*state.StoreError] too.
var (
	// ErrTampered means a ciphertext fails authentication: it was
	// edited, or moved to another session, run, position, version or
	// kind of part, or the fields kept in the clear beside it were. It
	// wraps [state.ErrTampered], so checks written for signed checkpoints
	// catch it too.
	ErrTampered = fmt.Errorf("encrypt: ciphertext fails authentication: %w", state.ErrTampered)
	// ErrWrongKey means the data was sealed under another data key than
	// the session's, or the session's data key does not unwrap under the
	// key-encryption key its record names.
	ErrWrongKey = errors.New("encrypt: wrong key")
	// ErrNoKey means sealed data was found for a session that has no
	// data key: the key record was deleted (crypto-shredded) or lost.
	ErrNoKey = errors.New("encrypt: the session has no data key")
	// ErrErased means the session was erased ([Store.Erase]): nothing can
	// be read from it or written to it any more, so a run of it that was
	// still paused fails on resume.
	ErrErased = errors.New("encrypt: session erased")
	// ErrUnsealed means plaintext was found where ciphertext was
	// expected: data written without encryption, or written around it.
	ErrUnsealed = errors.New("encrypt: data is not sealed")
)

// A SealError reports data that could not be sealed or opened, and where.
type SealError struct {
	SessionID string
	RunID     string // "" when not known (a session item listed by List)
	What      string // "item", "head", "piece", "context", "data key"
	Seq       int64  // an item's or piece's position, or 0
	Err       error  // one of the sentinels above, or the provider's error
}

// Error says what failed, where, and why.
func (e *SealError) Error() string {
	where := fmt.Sprintf("session %q", e.SessionID)
	if e.RunID != "" {
		where += fmt.Sprintf(" run %q", e.RunID)
	}
	if e.Seq != 0 {
		where += fmt.Sprintf(" position %d", e.Seq)
	}
	return fmt.Sprintf("encrypt: %s of %s: %v", e.What, where, e.Err)
}

// Unwrap returns the cause, a sentinel of this package or a provider's
// error.
func (e *SealError) Unwrap() error { return e.Err }

// notLoadedError means a session's data key is not in the keyring's
// cache: a store called the keyring's [state.Sealer] directly, outside a
// wrapper that loads keys, or the key was evicted between the load and
// the use. The wrappers load the key and try again.
type notLoadedError struct{ sessionID string }

func (e *notLoadedError) Error() string {
	return fmt.Sprintf("encrypt: the data key of session %q is not loaded: use the store through encrypt.Wrap", e.sessionID)
}
