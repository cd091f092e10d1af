package statetest_test

import (
	"os"
	"testing"

	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/statetest"
)

// TestSignedFileStore runs the signed suite against state's own file store,
// editing its files directly.
func TestSignedFileStore(t *testing.T) {
	dir := t.TempDir()
	newStore := func(t *testing.T, opts ...state.StoreOption) *state.FileStore {
		s, err := state.NewFileStore(dir, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	files := newStore(t)
	statetest.TestSignedStore(t,
		func(t *testing.T, m []state.MarshalOption, u []state.UnmarshalOption) state.Store {
			return newStore(t, state.WithCodec(m, u))
		},
		func(t *testing.T, runID string, edit func([]byte) []byte) {
			data, err := os.ReadFile(files.Path(runID))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(files.Path(runID), edit(data), 0o600); err != nil {
				t.Fatal(err)
			}
		})
}
