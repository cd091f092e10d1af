package memstore_test

import (
	"testing"

	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/memstore"
	"github.com/turnkit/turnkit/state/statetest"
)

func TestStore(t *testing.T) {
	statetest.TestStore(t, func(t *testing.T) state.Store { return memstore.New() })
}

func TestSignedStore(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	statetest.TestStore(t, func(t *testing.T) state.Store {
		return memstore.New(memstore.WithCodec(
			[]state.MarshalOption{state.WithSigningKey("k1", key)},
			[]state.UnmarshalOption{state.WithVerifyKeys(map[string][]byte{"k1": key})},
		))
	})
}
