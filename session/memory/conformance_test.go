package memory_test

import (
	"testing"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/session/sessiontest"
)

func TestConformance(t *testing.T) {
	sessiontest.TestStore(t, func(t *testing.T) session.Store {
		s := memory.New()
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

func TestCache(t *testing.T) {
	sessiontest.TestCache(t, func(t *testing.T) (session.Store, session.Store) {
		s := memory.New()
		t.Cleanup(func() { _ = s.Close() })
		return s, s
	})
}
