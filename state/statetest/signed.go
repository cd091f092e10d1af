package statetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/turnkit/turnkit/state"
)

// A CodecStoreFunc returns a store that encodes checkpoints with marshal and
// decodes them with unmarshal (the backend's WithCodec option, such as
// filestore.WithCodec). Every store it returns within one [TestSignedStore]
// must share one storage: a run saved through one is loaded through
// another, which is how key rotation is checked. Register any cleanup on t.
type CodecStoreFunc func(t *testing.T, marshal []state.MarshalOption, unmarshal []state.UnmarshalOption) state.Store

// A RewriteFunc edits a stored checkpoint behind the store's back, as an
// attacker or an operator with access to the database would: it reads the
// bytes stored for runID (failing t if there are none), passes them to
// edit, and stores what edit returns in their place, without going through
// the store's API and without changing the stored version.
type RewriteFunc func(t *testing.T, runID string, edit func(stored []byte) []byte)

// Keys of the signed suite: "k1" is the old key, "k2" the new one, "k3" a
// key no verifier trusts.
var (
	key1 = []byte("statetest-key-1-0123456789abcdef")
	key2 = []byte("statetest-key-2-0123456789abcdef")
	key3 = []byte("statetest-key-3-0123456789abcdef")
)

// TestSignedStore runs the suite for a store configured with
// [state.WithSigningKey] and [state.WithVerifyKeys]: the [TestStore]
// contract holds for a signing store; a saved checkpoint is signed with the
// store's key; a checkpoint edited at rest (its text, a pending approval's
// arguments, its signature removed, replayed from another run, or its key
// ID renamed), one signed with an untrusted key, and an unsigned one all
// fail to load with an error that wraps [state.ErrTampered] and a
// [*state.SignatureError]; and a key rotation works (a store that signs
// with the new key and verifies both loads the old checkpoints and writes
// new-key ones, which a store trusting only the old key refuses).
func TestSignedStore(t *testing.T, newStore CodecStoreFunc, rewrite RewriteFunc) {
	t.Helper()
	signer := func(t *testing.T, keyID string, key []byte, verify map[string][]byte) state.Store {
		var m []state.MarshalOption
		if key != nil {
			m = []state.MarshalOption{state.WithSigningKey(keyID, key)}
		}
		return newStore(t, m, []state.UnmarshalOption{state.WithVerifyKeys(verify)})
	}
	both := map[string][]byte{"k1": key1, "k2": key2}

	t.Run("Conformance", func(t *testing.T) {
		TestStore(t, func(t *testing.T) state.Store { return signer(t, "k1", key1, map[string][]byte{"k1": key1}) })
	})
	t.Run("SavedSigned", func(t *testing.T) {
		s := signer(t, "k1", key1, both)
		r := SampleRun(t, newID(t))
		save(t, s, r)
		if got := storedKeyID(t, rewrite, r.ID()); got != "k1" {
			t.Errorf("stored checkpoint is signed with key %q, want %q", got, "k1")
		}
		if d := Diff(t, load(t, s, r.ID()), r); d != "" {
			t.Errorf("Load after a signed Save (-want +got):\n%s", d)
		}
	})
	t.Run("EditRefused", func(t *testing.T) { testEditRefused(t, signer(t, "k1", key1, both), rewrite) })
	t.Run("UntrustedRefused", func(t *testing.T) {
		verifier := signer(t, "k1", key1, both)
		for _, tt := range []struct {
			name, keyID string
			key         []byte
		}{
			{"UnknownKey", "k3", key3},
			{"TrustedIDWrongKey", "k1", key3},
			{"Unsigned", "", nil},
		} {
			t.Run(tt.name, func(t *testing.T) {
				r := SampleRun(t, newID(t))
				save(t, signer(t, tt.keyID, tt.key, nil), r)
				wantTampered(t, verifier, r.ID(), tt.keyID)
			})
		}
	})
	t.Run("KeyRotation", func(t *testing.T) {
		old := signer(t, "k1", key1, map[string][]byte{"k1": key1})
		rotating := signer(t, "k2", key2, both)
		retired := signer(t, "k2", key2, map[string][]byte{"k2": key2})

		r := SampleRun(t, newID(t))
		save(t, old, r)
		got := load(t, rotating, r.ID()) // the old key still verifies
		if d := Diff(t, got, r); d != "" {
			t.Fatalf("rotating store loads an old-key checkpoint (-want +got):\n%s", d)
		}
		must(t, got.Approve("call_rm"))
		save(t, rotating, got)
		if id := storedKeyID(t, rewrite, r.ID()); id != "k2" {
			t.Errorf("after rotation the checkpoint is signed with key %q, want %q", id, "k2")
		}
		if d := Diff(t, load(t, retired, r.ID()), got); d != "" {
			t.Errorf("new-key-only store loads the re-signed checkpoint (-want +got):\n%s", d)
		}
		wantTampered(t, old, r.ID(), "k2")
	})
}

// testEditRefused saves a run per edit, edits it at rest and checks that
// Load refuses it.
func testEditRefused(t *testing.T, s state.Store, rewrite RewriteFunc) {
	other := SampleRun(t, newID(t))
	save(t, s, other)
	otherSig := storedMember(t, rewrite, other.ID(), "signature")

	replace := func(old, new string) func(*testing.T, []byte) []byte {
		return func(t *testing.T, b []byte) []byte {
			if !bytes.Contains(b, []byte(old)) {
				t.Fatalf("stored checkpoint does not contain %q:\n%s", old, b)
			}
			return bytes.ReplaceAll(b, []byte(old), []byte(new))
		}
	}
	member := func(edit func(env map[string]json.RawMessage)) func(*testing.T, []byte) []byte {
		return func(t *testing.T, b []byte) []byte {
			var env map[string]json.RawMessage
			must(t, json.Unmarshal(b, &env))
			edit(env)
			out, err := json.Marshal(env)
			must(t, err)
			return out
		}
	}
	tests := []struct {
		name  string
		keyID string // the key ID the refused checkpoint names
		edit  func(t *testing.T, stored []byte) []byte
	}{
		{"InputText", "k1", replace("delete the temp files", "delete all the files")},
		{"ApprovalArguments", "k1", replace("/tmp/x", "/etc/x")},
		{"SignatureRemoved", "", member(func(env map[string]json.RawMessage) { delete(env, "signature") })},
		{"SignatureOfAnotherRun", "k1", member(func(env map[string]json.RawMessage) { env["signature"] = otherSig })},
		{"KeyIDRenamed", "k2", replace(`"key_id":"k1"`, `"key_id":"k2"`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := SampleRun(t, newID(t))
			save(t, s, r)
			rewrite(t, r.ID(), func(b []byte) []byte { return tt.edit(t, b) })
			wantTampered(t, s, r.ID(), tt.keyID)
		})
	}
	if d := Diff(t, load(t, s, other.ID()), other); d != "" {
		t.Errorf("the unedited run no longer loads the same (-want +got):\n%s", d)
	}
}

// wantTampered checks that loading runID fails with ErrTampered and a
// SignatureError naming keyID.
func wantTampered(t *testing.T, s state.Store, runID, keyID string) {
	t.Helper()
	run, err := s.Load(context.Background(), runID)
	if !errors.Is(err, state.ErrTampered) {
		t.Fatalf("Load = (%v, %v), want an error wrapping state.ErrTampered", run, err)
	}
	var se *state.SignatureError
	if !errors.As(err, &se) {
		t.Fatalf("Load error %v (%T) does not wrap a *state.SignatureError", err, err)
	}
	if se.KeyID != keyID {
		t.Errorf("SignatureError.KeyID = %q, want %q", se.KeyID, keyID)
	}
}

// storedMember returns the top-level member name of runID's stored
// checkpoint, leaving the checkpoint as it is.
func storedMember(t *testing.T, rewrite RewriteFunc, runID, name string) json.RawMessage {
	t.Helper()
	var got json.RawMessage
	rewrite(t, runID, func(b []byte) []byte {
		var env map[string]json.RawMessage
		must(t, json.Unmarshal(b, &env))
		got = env[name]
		return b
	})
	if got == nil {
		t.Fatalf("stored checkpoint of %s has no %q member", runID, name)
	}
	return got
}

// storedKeyID returns the key ID runID's stored checkpoint is signed with.
func storedKeyID(t *testing.T, rewrite RewriteFunc, runID string) string {
	t.Helper()
	var sig struct {
		KeyID string `json:"key_id"`
	}
	must(t, json.Unmarshal(storedMember(t, rewrite, runID, "signature"), &sig))
	return sig.KeyID
}
