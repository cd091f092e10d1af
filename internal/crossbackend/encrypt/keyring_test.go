package encrypt_test

import (
	"errors"
	"strconv"
	"testing"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/session/encrypt"
	"github.com/turnkit/turnkit/session/memory"
	"github.com/turnkit/turnkit/state"
)

// TestFileProvider wraps under a key file and unwraps under the files
// present, after a rotation to a second file too.
func TestFileProvider(t *testing.T) {
	dir := t.TempDir()
	if _, err := encrypt.NewFileProvider(dir, "k1"); err == nil {
		t.Fatal("NewFileProvider without the current key's file = nil error")
	}
	if err := encrypt.WriteKeyFile(dir, "k1"); err != nil {
		t.Fatal(err)
	}
	if err := encrypt.WriteKeyFile(dir, "k1"); err == nil {
		t.Fatal("WriteKeyFile over an existing key = nil error")
	}
	p1, err := encrypt.NewFileProvider(dir, "k1")
	if err != nil {
		t.Fatal(err)
	}
	kek, wrapped, err := p1.Wrap(t.Context(), "s", []byte("0123456789abcdef0123456789abcdef"))
	if err != nil || kek != "k1" {
		t.Fatalf("Wrap = %q, %v", kek, err)
	}
	if err := encrypt.WriteKeyFile(dir, "k2"); err != nil {
		t.Fatal(err)
	}
	p2, err := encrypt.NewFileProvider(dir, "k2")
	if err != nil {
		t.Fatal(err)
	}
	if dek, err := p2.Unwrap(t.Context(), "s", "k1", wrapped); err != nil || string(dek) != "0123456789abcdef0123456789abcdef" {
		t.Fatalf("Unwrap after rotation = %q, %v", dek, err)
	}
	if _, err := p2.Unwrap(t.Context(), "other", "k1", wrapped); !errors.Is(err, encrypt.ErrWrongKey) {
		t.Errorf("Unwrap for another session = %v, want ErrWrongKey", err)
	}
	if kek, _, _ := p2.Wrap(t.Context(), "s", make([]byte, 32)); kek != "k2" {
		t.Errorf("Wrap after rotation names %q, want k2", kek)
	}
}

// TestCacheBound keeps one data key in memory while sessions take turns:
// each use reloads an evicted key, and every read still opens.
func TestCacheBound(t *testing.T) {
	kr := encrypt.NewKeyring(encrypt.NewMemoryProvider("kek"), encrypt.WithCacheSize(1), encrypt.WithKeyStore(encrypt.MemoryKeys()))
	s := encrypt.WrapSessions(memory.New(), kr)
	for round := range 3 {
		for i := range 4 {
			sid := "s" + strconv.Itoa(i)
			it := state.UserMessage("round " + strconv.Itoa(round)).WithSeq(int64(round + 1))
			if err := s.Append(t.Context(), sid, "r", []state.Item{it}); err != nil {
				t.Fatalf("Append(%s) = %v", sid, err)
			}
		}
	}
	for i := range 4 {
		items, err := s.List(t.Context(), "s"+strconv.Itoa(i), 0)
		if err != nil || len(items) != 3 || items[2].Text() != "round 2" {
			t.Fatalf("List(s%d) = %v, %v", i, items, err)
		}
	}
	// A keyring without a key store says so.
	bare := encrypt.WrapSessions(memory.New(), encrypt.NewKeyring(encrypt.NewMemoryProvider("kek")))
	if err := bare.Append(t.Context(), "s", "r", []state.Item{state.UserMessage("x").WithSeq(1)}); err == nil {
		t.Error("Append through a keyring without a key store = nil error")
	}
}

// TestCheckpointKeyEvicted saves and loads checkpoints of more sessions
// than the cache holds, through a file store: the keys reload.
func TestCheckpointKeyEvicted(t *testing.T) {
	p := encrypt.NewMemoryProvider("kek")
	kr := encrypt.NewKeyring(p, encrypt.WithCacheSize(1))
	_, rs := openMemory()(t, kr, nil, nil)
	for i := range 3 {
		r := state.NewRun("run-"+strconv.Itoa(i), "a")
		runcore.SetSessionID(r, "s"+strconv.Itoa(i))
		if err := rs.Save(t.Context(), r); err != nil {
			t.Fatalf("Save = %v", err)
		}
	}
	for i := range 3 {
		if r, err := rs.Load(t.Context(), "run-"+strconv.Itoa(i)); err != nil || r.SessionID() != "s"+strconv.Itoa(i) {
			t.Fatalf("Load = %v, %v", r, err)
		}
	}
}
