package encrypt_test

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/encrypt"
	"github.com/turnkit/turnkit/session/sqlite"
)

// TestItemCodecChanges: a SQLite store that seals its items itself
// (sqlite.WithItemCodec) opens them in ReadChanges too, the read the
// history cache makes, as it does in ListBefore: never the sealed form.
//
// Checked to fail without it: ReadChanges decoded the sealed JSON, and the
// items came back as the ciphertext's envelope.
func TestItemCodecChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sealed.db")
	kr := encrypt.NewKeyring(encrypt.NewMemoryProvider("kek-1"))
	want := fill(t, sealedSQLiteWith(t, path, kr, true, nil, nil))
	db, err := sqlite.Open(path, sqlite.WithItemCodec(kr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ch, err := db.ReadChanges(t.Context(), "session-1", session.ChangeQuery{Since: 1})
	if err != nil {
		t.Fatalf("ReadChanges = %v", err)
	}
	var got []string
	for _, p := range ch.Items {
		got = append(got, p.Item.String()+" "+string(p.Item.AppendRaw(nil)))
	}
	var wantS []string
	for _, it := range want {
		wantS = append(wantS, it.String()+" "+string(it.AppendRaw(nil)))
	}
	if d := cmp.Diff(wantS, got); d != "" {
		t.Errorf("ReadChanges items (-want +got):\n%s", d)
	}
}
