package state_test

import (
	"testing"

	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/statetest"
)

func TestMemoryStore(t *testing.T) {
	statetest.TestStore(t, func(t *testing.T) state.Store { return state.NewMemoryStore() })
}

func TestFileStore(t *testing.T) {
	statetest.TestStore(t, func(t *testing.T) state.Store {
		s, err := state.NewFileStore(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestSignedFileStore(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	statetest.TestStore(t, func(t *testing.T) state.Store {
		s, err := state.NewFileStore(t.TempDir(), state.WithCodec(
			[]state.MarshalOption{state.WithSigningKey("k1", key)},
			[]state.UnmarshalOption{state.WithVerifyKeys(map[string][]byte{"k1": key})},
		))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
