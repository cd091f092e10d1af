package sign

import (
	"testing"

	"github.com/turnkit/turnkit/state/internal/wire"
)

var keys = map[string][]byte{"k1": []byte("secret one"), "k2": []byte("secret two")}

const payload = `{"id":"r1","items":[{"seq":1}]}`

// TestSignVerifies checks that a signature verifies under its key, with
// the payload in another layout, and under a ring holding other keys too.
func TestSignVerifies(t *testing.T) {
	sig := Sign("k1", keys["k1"], "turnkit.run", 1, []byte(payload))
	if sig.KeyID != "k1" || sig.MAC == "" {
		t.Fatalf("Sign = %+v", sig)
	}
	for _, p := range []string{payload, "{\n  \"id\": \"r1\",\n  \"items\": [ {\"seq\": 1} ]\n}"} {
		if reason := Verify(keys, sig, "turnkit.run", 1, []byte(p)); reason != "" {
			t.Errorf("Verify(%q) = %q, want it to verify", p, reason)
		}
	}
}

// TestVerifyRefuses checks each refusal and its reason.
func TestVerifyRefuses(t *testing.T) {
	sig := Sign("k1", keys["k1"], "turnkit.run", 1, []byte(payload))
	for _, c := range []struct {
		name    string
		keys    map[string][]byte
		sig     *wire.Signature
		schema  string
		version int
		payload string
		want    string
	}{
		{"unsigned", keys, nil, "turnkit.run", 1, payload, ReasonUnsigned},
		{"unknown key", map[string][]byte{"k2": keys["k2"]}, sig, "turnkit.run", 1, payload, ReasonUnknownKey},
		{"empty ring", map[string][]byte{}, sig, "turnkit.run", 1, payload, ReasonUnknownKey},
		{"not base64", keys, &wire.Signature{KeyID: "k1", MAC: "not base64!"}, "turnkit.run", 1, payload, ReasonNotBase64},
		{"edited payload", keys, sig, "turnkit.run", 1, `{"id":"r2","items":[{"seq":1}]}`, ReasonMismatch},
		{"other schema", keys, sig, "turnkit.other", 1, payload, ReasonMismatch},
		{"other version", keys, sig, "turnkit.run", 2, payload, ReasonMismatch},
		{"key ID moved", keys, &wire.Signature{KeyID: "k2", MAC: sig.MAC}, "turnkit.run", 1, payload, ReasonMismatch},
	} {
		if got := Verify(c.keys, c.sig, c.schema, c.version, []byte(c.payload)); got != c.want {
			t.Errorf("%s: Verify = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestLengthPrefixed checks that moving bytes between the signed parts
// changes the MAC: each part is length-prefixed.
func TestLengthPrefixed(t *testing.T) {
	a := mac("k", []byte("key"), "ab", 1, []byte(`"c"`))
	b := mac("bk", []byte("key"), "a", 1, []byte(`"c"`))
	if string(a) == string(b) {
		t.Error("two different inputs share a MAC")
	}
}

// TestNotJSON checks that a payload that is not JSON is signed as its
// bytes, and an edit of them is refused.
func TestNotJSON(t *testing.T) {
	sig := Sign("k1", keys["k1"], "turnkit.run", 1, []byte("{not json"))
	if reason := Verify(keys, sig, "turnkit.run", 1, []byte("{not json")); reason != "" {
		t.Errorf("Verify = %q", reason)
	}
	if reason := Verify(keys, sig, "turnkit.run", 1, []byte("{not  json")); reason != ReasonMismatch {
		t.Errorf("Verify of edited bytes = %q, want %q", reason, ReasonMismatch)
	}
}
