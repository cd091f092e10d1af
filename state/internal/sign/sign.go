// Package sign computes and verifies the HMAC-SHA256 signature of a
// checkpoint's run payload, the "signature" member of package state's
// checkpoint format.
//
// The MAC covers the schema name, the version, the key ID and the
// payload's canonical (compacted) JSON, each length-prefixed so that no
// two inputs share an encoding: any edit of the run is detected, its
// layout (whitespace) is not part of it.
package sign

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strconv"

	"github.com/turnkit/turnkit/state/internal/wire"
)

// The reasons [Verify] gives for a signature that does not verify.
const (
	ReasonUnsigned   = "checkpoint is not signed"
	ReasonUnknownKey = "unknown key"
	ReasonNotBase64  = "MAC is not base64url"
	ReasonMismatch   = "MAC does not match: the checkpoint was edited"
)

// Sign returns the signature of payload, of the given schema and version,
// under key, named keyID so that a verifier can pick the key among
// several.
func Sign(keyID string, key []byte, schema string, version int, payload []byte) *wire.Signature {
	return &wire.Signature{KeyID: keyID, MAC: base64.RawURLEncoding.EncodeToString(mac(keyID, key, schema, version, payload))}
}

// Verify checks sig, the signature of payload of the given schema and
// version, against keys (key ID → key). It returns "" when sig verifies,
// and otherwise one of the Reason constants.
func Verify(keys map[string][]byte, sig *wire.Signature, schema string, version int, payload []byte) (reason string) {
	if sig == nil {
		return ReasonUnsigned
	}
	key, ok := keys[sig.KeyID]
	if !ok {
		return ReasonUnknownKey
	}
	got, err := base64.RawURLEncoding.DecodeString(sig.MAC)
	if err != nil {
		return ReasonNotBase64
	}
	if !hmac.Equal(got, mac(sig.KeyID, key, schema, version, payload)) {
		return ReasonMismatch
	}
	return ""
}

// mac computes the HMAC over the canonical bytes: schema, version, key ID
// and the compacted run JSON, each length-prefixed.
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
