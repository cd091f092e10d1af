package encrypt_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/encrypt"
	"github.com/turnkit/turnkit/session/sessiontest"
	"github.com/turnkit/turnkit/state"
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
