package state

import (
	"bytes"

	signpkg "github.com/turnkit/turnkit/state/internal/sign"
)

// WithSigningKey makes Marshal sign the checkpoint with HMAC-SHA256 under
// key, naming it keyID so that a verifier can pick the key among several
// (key rotation). The MAC covers the schema name, the version, the key ID
// and the run's canonical (compacted) JSON, so any edit of the run, however
// consistent, is detected; layout (whitespace) is not part of it. A nil or
// empty key leaves the checkpoint unsigned.
func WithSigningKey(keyID string, key []byte) MarshalOption {
	key = bytes.Clone(key) // once: marshalling never writes it
	return marshalOptionFunc(func(c marshalConfig) marshalConfig {
		if len(key) > 0 {
			c.keyID, c.key = keyID, key
		}
		return c
	})
}

// WithVerifyKeys makes Unmarshal require a signature made with one of keys
// (key ID → key). A checkpoint that is unsigned, names a key that is not in
// keys, or whose MAC does not match fails with a [*SignatureError]
// wrapping [ErrTampered], before anything else of it is decoded. Passing
// the old and the new key during a rotation accepts both. A nil map turns
// verification off; an empty one refuses every checkpoint.
func WithVerifyKeys(keys map[string][]byte) UnmarshalOption {
	return unmarshalOptionFunc(func(c *unmarshalConfig) {
		if keys == nil {
			return
		}
		c.keys = make(map[string][]byte, len(keys))
		for id, k := range keys {
			c.keys[id] = bytes.Clone(k)
		}
	})
}

// sign is the signature of a payload (package sign).
func sign(keyID string, key []byte, schema string, version int, payload []byte) *wireSignature {
	return signpkg.Sign(keyID, key, schema, version, payload)
}

// verify checks a payload's signature against keys (package sign), and
// says why it does not verify with a [*SignatureError].
func verify(keys map[string][]byte, sig *wireSignature, schema string, version int, payload []byte) error {
	reason := signpkg.Verify(keys, sig, schema, version, payload)
	if reason == "" {
		return nil
	}
	keyID := ""
	if sig != nil && reason != signpkg.ReasonUnsigned {
		keyID = sig.KeyID
	}
	return &SignatureError{KeyID: keyID, Reason: reason}
}
