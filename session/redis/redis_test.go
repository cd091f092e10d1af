package redis_test

import (
	"errors"
	"testing"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/redis"
	"github.com/turnkit/turnkit/state"
)

// TestOpenOwnsClient checks that a store made by Open closes its client,
// and that two stores (two workers) with one prefix share sessions.
func TestOpenOwnsClient(t *testing.T) {
	_, prefix := testClient(t)
	url := serverURL(t)
	a, err := redis.Open(t.Context(), url, redis.WithPrefix(prefix))
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	b, err := redis.Open(t.Context(), url, redis.WithPrefix(prefix))
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	defer b.Close()
	if err := a.Append(t.Context(), "s", "r", []state.Item{state.UserMessage("hi").WithSeq(1)}); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := b.Lookup(t.Context(), "s", "r", 1); err != nil || !ok || got.Text() != "hi" {
		t.Fatalf("Lookup from another store = %v, %v, %v", got, ok, err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Delete(t.Context(), "r"); !errors.Is(err, session.ErrClosed) {
		t.Fatalf("Delete after Close = %v, want ErrClosed", err)
	}
}

func TestOpenBadURL(t *testing.T) {
	for _, url := range []string{"not a url", "redis://127.0.0.1:1/0?dial_timeout=1s"} {
		if s, err := redis.Open(t.Context(), url); err == nil {
			s.Close()
			t.Errorf("Open(%q) = nil error", url)
		}
	}
}
