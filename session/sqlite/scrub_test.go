package sqlite_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/state"
)

// TestScrub clears a session and scrubs: no byte of it is left in the
// database's files, where a clear alone leaves them.
func TestScrub(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scrub.db")
	s := open(t, path)
	secret := "the secret of session a"
	for _, sid := range []string{"a", "b"} {
		if err := s.Append(t.Context(), sid, "r", []state.Item{state.UserMessage("the secret of session " + sid).WithSeq(1)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Clear(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	if !inFiles(t, path, secret) {
		t.Fatal("a cleared session's bytes are not in the files before the scrub: the test cannot tell")
	}
	if err := s.Scrub(t.Context()); err != nil {
		t.Fatalf("Scrub = %v", err)
	}
	if inFiles(t, path, secret) {
		t.Error("a cleared session's bytes are in the files after the scrub")
	}
	if got, err := s.List(t.Context(), "b", 0); err != nil || len(got) != 1 {
		t.Errorf("the other session after the scrub: %v, %v", got, err)
	}
	_ = s.Close()
	if err := s.Scrub(t.Context()); !errors.Is(err, session.ErrClosed) {
		t.Errorf("Scrub after Close = %v, want ErrClosed", err)
	}
}

func inFiles(t *testing.T, path, needle string) bool {
	t.Helper()
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		data, err := os.ReadFile(name)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte(needle)) {
			return true
		}
	}
	return false
}
