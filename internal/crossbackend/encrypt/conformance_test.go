package encrypt_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/encrypt"
	"github.com/turnkit/turnkit/session/sessiontest"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/filestore"
	"github.com/turnkit/turnkit/state/statetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestConformance runs the session and checkpoint suites, every case,
// with encryption on, on every backend.
func TestConformance(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			p := encrypt.NewMemoryProvider("kek-1")
			t.Run("sessions", func(t *testing.T) {
				sessiontest.TestStore(t, func(t *testing.T) session.Store {
					ss, _ := b.open(t, encrypt.NewKeyring(p), nil, nil)
					return ss
				})
			})
			t.Run("checkpoints", func(t *testing.T) {
				statetest.TestStore(t, func(t *testing.T) state.Store {
					_, rs := b.open(t, encrypt.NewKeyring(p), nil, nil)
					return rs
				})
			})
		})
	}
}

// TestFilestoreConformance runs the checkpoint suite with encryption on
// over state/filestore, whose loads read the sealed head's versions
// (state.HeadVersions) to find its save files.
func TestFilestoreConformance(t *testing.T) {
	p := encrypt.NewMemoryProvider("kek-1")
	statetest.TestStore(t, func(t *testing.T) state.Store {
		kr := encrypt.NewKeyring(p, encrypt.WithKeyStore(encrypt.MemoryKeys()))
		fs, err := filestore.New(t.TempDir(), filestore.WithCodec(kr.Codec()))
		if err != nil {
			t.Fatal(err)
		}
		return encrypt.WrapRuns(fs, kr, nil)
	})
}
