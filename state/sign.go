package state

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strconv"
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

func sign(keyID string, key []byte, schema string, version int, payload []byte) *wireSignature {
	return &wireSignature{KeyID: keyID, MAC: base64.RawURLEncoding.EncodeToString(mac(keyID, key, schema, version, payload))}
}

func verify(keys map[string][]byte, sig *wireSignature, schema string, version int, payload []byte) error {
	if sig == nil {
		return &SignatureError{Reason: "checkpoint is not signed"}
	}
	key, ok := keys[sig.KeyID]
	if !ok {
		return &SignatureError{KeyID: sig.KeyID, Reason: "unknown key"}
	}
	got, err := base64.RawURLEncoding.DecodeString(sig.MAC)
	if err != nil {
		return &SignatureError{KeyID: sig.KeyID, Reason: "MAC is not base64url"}
	}
	if !hmac.Equal(got, mac(sig.KeyID, key, schema, version, payload)) {
		return &SignatureError{KeyID: sig.KeyID, Reason: "MAC does not match: the checkpoint was edited"}
	}
	return nil
}

// mac computes the HMAC over the canonical bytes: schema, version, key ID
// and the compacted run JSON, each length-prefixed so that no two inputs
// share an encoding.
func mac(keyID string, key []byte, schema string, version int, payload []byte) []byte {
	var canon bytes.Buffer
	canon.Grow(len(payload))
	if err := json.Compact(&canon, payload); err != nil {
		canon.Reset()
		canon.Write(payload) // not JSON: the MAC of the bytes as they are
	}
	h := hmac.New(sha256.New, key)
	for _, part := range [][]byte{[]byte(schema), []byte(strconv.Itoa(version)), []byte(keyID), canon.Bytes()} {
		h.Write(strconv.AppendInt(nil, int64(len(part)), 10))
		h.Write([]byte{':'})
		h.Write(part)
	}
	return h.Sum(nil)
}
