package encrypt_test

import (
	"bytes"
	"database/sql"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/turnkit/turnkit/internal/runcore"
	"github.com/turnkit/turnkit/session/encrypt"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/statetest"
)

// sealedOverhead is what a binary part adds to its plaintext: the
// format byte of state.WithBinaryParts, then the keyring's ciphertext
// (its format byte, the data key's ID, the nonce, the plaintext, the
// tag).
const sealedOverhead = 1 + 1 + 8 + 12 + 16

// partRows reads the stored pieces and contexts of run r1 from the
// database at path, each by a name ("piece 3", "context").
func partRows(t *testing.T, db *sql.DB) map[string][]byte {
	t.Helper()
	got := make(map[string][]byte)
	rows, err := db.QueryContext(t.Context(), `SELECT 'piece ' || seq, data FROM run_checkpoint_items WHERE run_id = 'r1'
		UNION ALL SELECT 'context', data FROM run_checkpoint_contexts WHERE run_id = 'r1'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			name string
			data []byte
		)
		if err := rows.Scan(&name, &data); err != nil {
			t.Fatal(err)
		}
		got[name] = data
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestCheckpointPartsAreBytes saves the same run plain and sealed on
// SQLite: each sealed piece and the context are kept as bytes (a format
// byte, then the ciphertext), exactly sealedOverhead longer than the
// plaintext, where the JSON string of its base64 was a third longer
// still; the head too, its routing fields in the clear before its
// ciphertext (its JSON form, the ciphertext's base64 among the fields'
// names, was 1.6 times the plain head).
func TestCheckpointPartsAreBytes(t *testing.T) {
	plainPath := filepath.Join(t.TempDir(), "plain.db")
	plain, err := sqlite.Open(plainPath)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.Save(t.Context(), statetest.SampleRun(t, "r1")); err != nil {
		t.Fatal(err)
	}
	want := partRows(t, rawDB(t, plainPath))

	path := filepath.Join(t.TempDir(), "s.db")
	fill(t, sealedSQLite(t, path, encrypt.NewKeyring(encrypt.NewMemoryProvider("kek-1")), nil, nil))
	got := partRows(t, rawDB(t, path))
	if len(got) != len(want) || want["context"] == nil {
		t.Fatalf("sealed parts %d, plain parts %d (a context among them: %t), want as many, with a context", len(got), len(want), want["context"] != nil)
	}
	var plainHead, head []byte
	if err := rawDB(t, plainPath).QueryRow(`SELECT data FROM run_checkpoints WHERE run_id = 'r1'`).Scan(&plainHead); err != nil {
		t.Fatal(err)
	}
	if err := rawDB(t, path).QueryRow(`SELECT data FROM run_checkpoints WHERE run_id = 'r1'`).Scan(&head); err != nil {
		t.Fatal(err)
	}
	// The head's clear fields: its format byte, "r1" and "session-1"
	// after their lengths, the version and the last full save (1 each).
	if clear := 1 + 3 + 10 + 2; len(head) != len(plainHead)+clear+sealedOverhead-1 || head[0] != 0x02 {
		t.Errorf("head: %d bytes starting %#x, want %d (plaintext %d + %d) starting 0x02", len(head), head[:1], len(plainHead)+clear+sealedOverhead-1, len(plainHead), clear+sealedOverhead-1)
	}
	for name, pt := range want {
		data := got[name]
		if len(data) != len(pt)+sealedOverhead || data[0] != 0x01 {
			t.Errorf("%s: %d bytes starting %#x, want %d (plaintext %d + %d) starting 0x01", name, len(data), data[:1], len(pt)+sealedOverhead, len(pt), sealedOverhead)
		}
	}
}

// TestBase64PartsStillOpen rewrites a sealed checkpoint's head, pieces
// and context into the form every store wrote before binary parts (a
// JSON string of the ciphertext's base64, the head a JSON object around
// it, which state/filestore and memstore still write): the run loads as saved, an edit of that form is still
// [encrypt.ErrTampered], and a later save adds binary pieces beside the
// old ones, which load together.
func TestBase64PartsStillOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	provider := encrypt.NewMemoryProvider("kek-1")
	fill(t, sealedSQLite(t, path, encrypt.NewKeyring(provider), nil, nil))
	db := rawDB(t, path)
	old := make(map[string][]byte)
	for name, data := range partRows(t, db) {
		if data[0] != 0x01 {
			t.Fatalf("%s starts with %#x, want a binary part", name, data[0])
		}
		old[name] = []byte(`"` + base64.RawStdEncoding.EncodeToString(data[1:]) + `"`)
	}
	var head []byte
	if err := db.QueryRow(`SELECT data FROM run_checkpoints WHERE run_id = 'r1'`).Scan(&head); err != nil {
		t.Fatal(err)
	}
	exec(t, db, `UPDATE run_checkpoints SET data = ? WHERE run_id = 'r1'`, jsonHead(t, head))
	for name, data := range old {
		if name == "context" {
			exec(t, db, `UPDATE run_checkpoint_contexts SET data = ? WHERE run_id = 'r1'`, data)
			continue
		}
		exec(t, db, `UPDATE run_checkpoint_items SET data = ? WHERE run_id = 'r1' AND 'piece ' || seq = ?`, data, name)
	}

	s := sealedSQLite(t, path, encrypt.NewKeyring(provider), nil, nil)
	run, err := s.Load(t.Context(), "r1")
	if err != nil {
		t.Fatalf("Load of base64 parts = %v", err)
	}
	if d := statetest.Diff(t, run, statetest.SampleRun(t, "r1")); d != "" {
		t.Errorf("loaded run differs:\n%s", d)
	}

	// A later save writes its pieces as bytes beside the base64 ones.
	seq := runcore.Reserve(run, 1)
	if err := runcore.RecordAll(run, state.AssistantMessage("msg_2", "one more").WithSeq(seq)); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(t.Context(), run); err != nil {
		t.Fatalf("Save = %v", err)
	}
	var binary, base64s int
	for _, data := range partRows(t, db) {
		switch data[0] {
		case 0x01:
			binary++
		case '"':
			base64s++
		}
	}
	if binary == 0 || base64s == 0 {
		t.Fatalf("after the save: %d binary parts, %d base64, want both", binary, base64s)
	}
	again, err := sealedSQLite(t, path, encrypt.NewKeyring(provider), nil, nil).Load(t.Context(), "r1")
	if err != nil {
		t.Fatalf("Load of mixed parts = %v", err)
	}
	if d := statetest.Diff(t, again, run); d != "" {
		t.Errorf("run loaded after the save differs:\n%s", d)
	}

	// A base64 piece edited fails authentication as a binary one does.
	for name, data := range old {
		if name == "context" {
			continue
		}
		edited := bytes.Clone(data)
		edited[20] = map[bool]byte{true: 'B', false: 'A'}[edited[20] == 'A'] // another base64 digit, inside the nonce
		exec(t, db, `UPDATE run_checkpoint_items SET data = ? WHERE run_id = 'r1' AND 'piece ' || seq = ?`, edited, name)
		break
	}
	_, err = sealedSQLite(t, path, encrypt.NewKeyring(provider), nil, nil).Load(t.Context(), "r1")
	if se := (*encrypt.SealError)(nil); !errors.Is(err, encrypt.ErrTampered) || !errors.As(err, &se) {
		t.Fatalf("Load of an edited base64 piece = %v, want a *SealError wrapping ErrTampered", err)
	}
}

// jsonHead returns the JSON form of the binary sealed head: its clear
// fields as members of "run", its ciphertext's base64 as "sealed".
func jsonHead(t *testing.T, head []byte) []byte {
	t.Helper()
	if len(head) == 0 || head[0] != 0x02 {
		t.Fatalf("head starts with %q, want a binary head", head[:min(len(head), 1)])
	}
	rest := head[1:]
	field := func() string {
		n, k := binary.Uvarint(rest)
		f := string(rest[k : k+int(n)])
		rest = rest[k+int(n):]
		return f
	}
	number := func() int64 {
		v, k := binary.Varint(rest)
		rest = rest[k:]
		return v
	}
	rid, sid := field(), field()
	version, full := number(), number()
	return fmt.Appendf(nil, `{"schema":%q,"run":{"id":%q,"session_id":%q,"version":%d,"extension":{"turnkit.delta":{"full":%d}}},"sealed":%q}`,
		state.SealedSchema, rid, sid, version, full, base64.RawStdEncoding.EncodeToString(rest))
}

// TestReleasedBuffersLeaveStoredParts saves two runs of one session in
// turns on sealed SQLite, an item recorded before every save, so that
// each save's sealed parts are written into the buffer the save before
// it (of the other run) handed back (state.Delta.Release): the driver
// copies what it binds, so every run loads as it was saved, all its
// pieces intact; a store that kept the bytes would load the other run's
// later parts in their place and fail to open them.
func TestReleasedBuffersLeaveStoredParts(t *testing.T) {
	s := sealedSQLite(t, filepath.Join(t.TempDir(), "s.db"), encrypt.NewKeyring(encrypt.NewMemoryProvider("kek-1")), nil, nil)
	runs := []*state.Run{statetest.SampleRun(t, "r1"), statetest.SampleRun(t, "r2")}
	for i := range 12 {
		for _, r := range runs {
			seq := runcore.Reserve(r, 1)
			msg := state.AssistantMessage(fmt.Sprintf("msg_%d", seq), fmt.Sprintf("answer %d of %s", i, r.ID()))
			if err := runcore.Record(r, msg.WithSeq(seq)); err != nil {
				t.Fatal(err)
			}
			if err := s.Save(t.Context(), r); err != nil {
				t.Fatalf("save %d of %s: %v", i, r.ID(), err)
			}
		}
	}
	for _, r := range runs {
		got, err := s.Load(t.Context(), r.ID())
		if err != nil {
			t.Fatalf("Load(%s) = %v", r.ID(), err)
		}
		want, err := state.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if doc, err := state.Marshal(got); err != nil || !bytes.Equal(doc, want) {
			t.Errorf("%s loads as\n%s\nwant\n%s (%v)", r.ID(), doc, want, err)
		}
	}
}
