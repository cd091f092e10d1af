package encrypt_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/encrypt"
	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
	"github.com/turnkit/turnkit/state/statetest"
)

// secrets are texts of statetest.SampleRun and of the items below that
// must not be found at rest.
var secrets = []string{"delete the temp files", "two files to remove", "Removing them now", "earlier answer", "my card is 4111", "tmp/x", "no_secrets"}

// sealedSQLite opens a sealed SQLite store at path with keyring kr.
func sealedSQLite(t *testing.T, path string, kr *encrypt.Keyring, m []state.MarshalOption, u []state.UnmarshalOption) *encrypt.Store {
	return sealedSQLiteWith(t, path, kr, false, m, u)
}

// sealedSQLiteWith is sealedSQLite with, when itemCodec, the keyring as
// the store's item codec: the store seals the items itself.
func sealedSQLiteWith(t *testing.T, path string, kr *encrypt.Keyring, itemCodec bool, m []state.MarshalOption, u []state.UnmarshalOption) *encrypt.Store {
	t.Helper()
	km, ku := kr.Codec()
	opts := []sqlite.Option{sqlite.WithCodec(append(m, km...), append(u, ku...))}
	if itemCodec {
		opts = append(opts, sqlite.WithItemCodec(kr))
	}
	db, err := sqlite.Open(path, opts...)
	if err != nil {
		t.Fatalf("sqlite.Open = %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return encrypt.Wrap(db, kr)
}

// fill stores a session's items and a checkpoint of run "r1" of it.
func fill(t *testing.T, s *encrypt.Store) []state.Item {
	t.Helper()
	items := []state.Item{
		state.UserMessage("my card is 4111").WithSeq(1),
		state.Reasoning("rs_1", "two files to remove").WithSeq(2),
		state.ToolCall("fc_1", "call_rm", "delete_file", `{"path":"/tmp/x"}`).WithSeq(3),
		state.ToolOutput("call_rm", "delete_file", "deleted /tmp/x").WithSeq(4),
		state.AssistantMessage("msg_1", "Removing them now.").WithSeq(5),
	}
	if err := s.Append(t.Context(), "session-1", "r0", items); err != nil {
		t.Fatalf("Append = %v", err)
	}
	if err := s.Save(t.Context(), statetest.SampleRun(t, "r1")); err != nil {
		t.Fatalf("Save = %v", err)
	}
	return items
}

// filesContain reports which secrets the files of the database at path
// (the file, its WAL and shm) hold.
func filesContain(t *testing.T, path string) []string {
	t.Helper()
	var found []string
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		data, err := readIfExists(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets {
			if bytes.Contains(data, []byte(s)) {
				found = append(found, filepath.Base(name)+": "+s)
			}
		}
	}
	return found
}

func TestSealedAtRest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	provider := encrypt.NewMemoryProvider("kek-1")
	s := sealedSQLite(t, path, encrypt.NewKeyring(provider), nil, nil)
	want := fill(t, s)
	got, err := s.List(t.Context(), "session-1", 0)
	if err != nil {
		t.Fatalf("List = %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("List = %v, want %v", got, want)
	}
	for i := range want {
		if !got[i].Equal(want[i]) || got[i].Text() != want[i].Text() {
			t.Errorf("item %d = %s %q, want %s %q", i, got[i], got[i].Text(), want[i], want[i].Text())
		}
	}
	run, err := s.Load(t.Context(), "r1")
	if err != nil {
		t.Fatalf("Load = %v", err)
	}
	if d := statetest.Diff(t, run, statetest.SampleRun(t, "r1")); d != "" {
		t.Errorf("loaded run differs:\n%s", d)
	}
	// Another keyring (another process) with the same provider reads it.
	other := sealedSQLite(t, path, encrypt.NewKeyring(provider), nil, nil)
	if _, err := other.Load(t.Context(), "r1"); err != nil {
		t.Fatalf("Load from another keyring = %v", err)
	}
	if found := filesContain(t, path); len(found) > 0 {
		t.Errorf("plaintext at rest: %v", found)
	}
	// The same data unsealed would be found: the search works.
	plainPath := filepath.Join(t.TempDir(), "plain.db")
	plain, err := sqlite.Open(plainPath)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.Append(t.Context(), "s", "r", want); err != nil {
		t.Fatal(err)
	}
	if found := filesContain(t, plainPath); len(found) == 0 {
		t.Error("the search finds nothing in a plain store either")
	}
}

// rawDB opens the database at path around the store, to edit it as an
// attacker with write access to the database would.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func exec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// TestTamperedIsTyped edits, moves and swaps sealed rows behind the
// store's back: each read fails with a typed error, never garbage.
func TestTamperedIsTyped(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(t *testing.T, db *sql.DB)
		read    func(t *testing.T, s *encrypt.Store) error
		wantErr error
	}{
		{
			name: "item ciphertext edited",
			edit: func(t *testing.T, db *sql.DB) {
				exec(t, db, `UPDATE session_items SET raw = replace(raw, '"turnkit_sealed":"A', '"turnkit_sealed":"B') WHERE seq = 1`)
				exec(t, db, `UPDATE session_items SET raw = CAST(substr(raw, 1, length(raw) - 5) || 'AAAA"}' AS BLOB) WHERE seq = 1`)
			},
			read:    listErr,
			wantErr: encrypt.ErrTampered,
		},
		{
			name: "item ciphertext byte changed", // in the binary form's tag, in the JSON form's base64
			edit: func(t *testing.T, db *sql.DB) {
				exec(t, db, `UPDATE session_items SET raw = CAST(substr(raw, 1, length(raw) - 20) || CASE WHEN substr(raw, -20, 1) = X'41' THEN X'42' ELSE X'41' END || substr(raw, -19) AS BLOB) WHERE seq = 3`)
			},
			read:    listErr,
			wantErr: encrypt.ErrTampered,
		},
		{
			name: "item's run edited in the clear",
			edit: func(t *testing.T, db *sql.DB) {
				exec(t, db, `UPDATE session_items SET raw = CAST(replace(raw, 'r0', 'r7') AS BLOB) WHERE seq = 2`)
			},
			read:    listErr,
			wantErr: encrypt.ErrTampered,
		},
		{
			name:    "item moved to another position",
			edit:    func(t *testing.T, db *sql.DB) { exec(t, db, `UPDATE session_items SET seq = 9 WHERE seq = 5`) },
			read:    listErr,
			wantErr: encrypt.ErrTampered,
		},
		{
			name: "two items swapped",
			edit: func(t *testing.T, db *sql.DB) {
				exec(t, db, `UPDATE session_items SET seq = 100 WHERE seq = 1`)
				exec(t, db, `UPDATE session_items SET seq = 1 WHERE seq = 5`)
				exec(t, db, `UPDATE session_items SET seq = 5 WHERE seq = 100`)
			},
			read:    listErr,
			wantErr: encrypt.ErrTampered,
		},
		{
			name:    "tool name edited in the clear",
			edit:    func(t *testing.T, db *sql.DB) { exec(t, db, `UPDATE session_items SET name = 'other' WHERE seq = 4`) },
			read:    listErr,
			wantErr: encrypt.ErrTampered,
		},
		{
			name: "item moved to another session",
			edit: func(t *testing.T, db *sql.DB) {
				exec(t, db, `UPDATE session_items SET session_id = 'session-2', place = 1 WHERE seq = 1`)
			},
			read: func(t *testing.T, s *encrypt.Store) error {
				if err := s.Append(t.Context(), "session-2", "r9", []state.Item{state.UserMessage("x").WithSeq(2)}); err != nil {
					t.Fatal(err)
				}
				_, err := s.List(t.Context(), "session-2", 0)
				return err
			},
			wantErr: encrypt.ErrWrongKey,
		},
		{
			name: "checkpoint piece edited",
			edit: func(t *testing.T, db *sql.DB) {
				exec(t, db, `UPDATE run_checkpoint_items SET data = CAST(substr(data, 1, 19) || CASE WHEN substr(data, 20, 1) = X'41' THEN X'42' ELSE X'41' END || substr(data, 21) AS BLOB) WHERE run_id = 'r1' AND seq = 2`)
			},
			read:    loadErr("r1"),
			wantErr: encrypt.ErrTampered,
		},
		{
			name: "checkpoint pieces swapped",
			edit: func(t *testing.T, db *sql.DB) {
				exec(t, db, `UPDATE run_checkpoint_items SET seq = 100 WHERE run_id = 'r1' AND seq = 1`)
				exec(t, db, `UPDATE run_checkpoint_items SET seq = 1 WHERE run_id = 'r1' AND seq = 2`)
				exec(t, db, `UPDATE run_checkpoint_items SET seq = 2 WHERE run_id = 'r1' AND seq = 100`)
			},
			read:    loadErr("r1"),
			wantErr: encrypt.ErrTampered,
		},
		{
			name: "checkpoint head moved to another run",
			edit: func(t *testing.T, db *sql.DB) {
				exec(t, db, `INSERT INTO run_checkpoints (run_id, version, data) SELECT 'r2', version, data FROM run_checkpoints WHERE run_id = 'r1'`)
				exec(t, db, `INSERT INTO run_checkpoint_items (run_id, seq, version, data) SELECT 'r2', seq, version, data FROM run_checkpoint_items WHERE run_id = 'r1'`)
				exec(t, db, `INSERT INTO run_checkpoint_contexts (run_id, data) SELECT 'r2', data FROM run_checkpoint_contexts WHERE run_id = 'r1'`)
			},
			read:    loadErr("r2"),
			wantErr: encrypt.ErrTampered,
		},
		{
			name: "checkpoint replaced by plaintext",
			edit: func(t *testing.T, db *sql.DB) {
				data, err := state.Marshal(statetest.SampleRun(t, "r1"))
				if err != nil {
					t.Fatal(err)
				}
				exec(t, db, `DELETE FROM run_checkpoint_items WHERE run_id = 'r1'`)
				exec(t, db, `DELETE FROM run_checkpoint_contexts WHERE run_id = 'r1'`)
				exec(t, db, `UPDATE run_checkpoints SET data = ? WHERE run_id = 'r1'`, data)
			},
			read:    loadErr("r1"),
			wantErr: state.ErrUnsealed,
		},
	}
	for _, tt := range tests {
		for _, itemCodec := range []bool{false, true} {
			name := tt.name
			if itemCodec {
				name += "/itemcodec"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				path := filepath.Join(t.TempDir(), "s.db")
				provider := encrypt.NewMemoryProvider("kek-1")
				fill(t, sealedSQLiteWith(t, path, encrypt.NewKeyring(provider), itemCodec, nil, nil))
				tt.edit(t, rawDB(t, path))
				s := sealedSQLiteWith(t, path, encrypt.NewKeyring(provider), itemCodec, nil, nil)
				err := tt.read(t, s)
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("read = %v, want %v", err, tt.wantErr)
				}
				var se *encrypt.SealError
				if tt.wantErr != state.ErrUnsealed && !errors.As(err, &se) {
					t.Errorf("read = %v, want a *SealError", err)
				}
			})
		}
	}
}

// TestItemCodecForms writes a session through the wrapper alone, which
// keeps the JSON form (the form the item codec wrote before its items
// were bytes), and through the keyring as SQLite's item codec, which
// keeps the binary form; the item codec reads both, and a retried append
// through it is recognized as a retry of either. The wrapper alone reads
// no binary row: it fails with session.ErrCorrupt, not garbage.
func TestItemCodecForms(t *testing.T) {
	for _, writer := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "s.db")
		provider := encrypt.NewMemoryProvider("kek-1")
		want := fill(t, sealedSQLiteWith(t, path, encrypt.NewKeyring(provider), writer, nil, nil))
		before := rawItems(t, path)
		checkForms(t, writer, before)
		reader := sealedSQLiteWith(t, path, encrypt.NewKeyring(provider), true, nil, nil)
		checkList(t, reader, want)
		if err := reader.Append(t.Context(), "session-1", "r0", want); err != nil {
			t.Errorf("the append retried through the item codec = %v", err)
		}
		if after := rawItems(t, path); strings.Join(after, "\n") != strings.Join(before, "\n") {
			t.Errorf("the retried append changed the stored items")
		}
		if writer {
			wrapper := sealedSQLiteWith(t, path, encrypt.NewKeyring(provider), false, nil, nil)
			if _, err := wrapper.List(t.Context(), "session-1", 0); !errors.Is(err, session.ErrCorrupt) {
				t.Errorf("the wrapper alone read binary rows: List = %v, want session.ErrCorrupt", err)
			}
		}
	}
}

// checkForms fails unless every stored item of rows (one string each)
// is sealed, in the binary form if binary (its format byte, then the run
// "r0" after its length), else in the JSON form.
func checkForms(t *testing.T, binary bool, rows []string) {
	t.Helper()
	for _, r := range rows {
		if strings.Contains(r, "4111") {
			t.Fatalf("an item is stored unsealed: %q", r)
		}
		if binary != strings.HasPrefix(r, "\x02\x02r0\x01") || binary == strings.Contains(r, "turnkit_sealed") {
			t.Fatalf("item codec %v stored %q", binary, r)
		}
	}
}

// checkList fails unless s lists session-1 as want.
func checkList(t *testing.T, s *encrypt.Store, want []state.Item) {
	t.Helper()
	got, err := s.List(t.Context(), "session-1", 0)
	if err != nil || len(got) != len(want) {
		t.Fatalf("List = %d items, %v; want %d", len(got), err, len(want))
	}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Errorf("item %d = %s, want %s", i, got[i], want[i])
		}
	}
}

// rawItems returns the stored JSON of every item of the database at path.
func rawItems(t *testing.T, path string) []string {
	rows, err := rawDB(t, path).Query(`SELECT raw FROM session_items ORDER BY session_id, place, seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			t.Fatal(err)
		}
		out = append(out, string(raw))
	}
	return out
}

func listErr(t *testing.T, s *encrypt.Store) error {
	_, err := s.List(t.Context(), "session-1", 0)
	return err
}

func loadErr(runID string) func(t *testing.T, s *encrypt.Store) error {
	return func(t *testing.T, s *encrypt.Store) error {
		_, err := s.Load(t.Context(), runID)
		return err
	}
}

// TestWrongKey reads with a provider that lost the key-encryption key,
// and with another provider altogether.
func TestWrongKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	provider := encrypt.NewMemoryProvider("kek-1")
	fill(t, sealedSQLite(t, path, encrypt.NewKeyring(provider), nil, nil))
	for name, p := range map[string]encrypt.KeyProvider{
		"another provider": encrypt.NewMemoryProvider("kek-1"),
		"key forgotten":    func() encrypt.KeyProvider { provider.Forget("kek-1"); return provider }(),
	} {
		s := sealedSQLite(t, path, encrypt.NewKeyring(p), nil, nil)
		if _, err := s.List(t.Context(), "session-1", 0); !errors.Is(err, encrypt.ErrWrongKey) {
			t.Errorf("%s: List = %v, want ErrWrongKey", name, err)
		}
		if _, err := s.Load(t.Context(), "r1"); !errors.Is(err, encrypt.ErrWrongKey) {
			t.Errorf("%s: Load = %v, want ErrWrongKey", name, err)
		}
	}
}

// TestRotate re-wraps the data keys under a new key-encryption key and
// retires the old one: the data reads as before, and no item or
// checkpoint row changed.
func TestRotate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	provider := encrypt.NewMemoryProvider("kek-1")
	kr := encrypt.NewKeyring(provider)
	s := sealedSQLite(t, path, kr, nil, nil)
	fill(t, s)
	if err := s.Append(t.Context(), "session-2", "r", []state.Item{state.UserMessage("other").WithSeq(1)}); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	before := dump(t, db, `SELECT raw FROM session_items ORDER BY seq`) + dump(t, db, `SELECT data FROM run_checkpoint_items WHERE run_id = 'r1' ORDER BY seq`)
	provider.Rotate("kek-2")
	if n, err := s.RotateAll(t.Context()); err != nil || n != 2 {
		t.Fatalf("RotateAll = %d, %v; want the 2 sessions' keys re-wrapped", n, err)
	}
	if n, err := s.RotateAll(t.Context()); err != nil || n != 2 {
		t.Fatalf("RotateAll again = %d, %v; want 2 re-wrapped again", n, err)
	}
	provider.Forget("kek-1")
	after := dump(t, db, `SELECT raw FROM session_items ORDER BY seq`) + dump(t, db, `SELECT data FROM run_checkpoint_items WHERE run_id = 'r1' ORDER BY seq`)
	if before != after {
		t.Error("rotation rewrote items or checkpoint pieces")
	}
	fresh := sealedSQLite(t, path, encrypt.NewKeyring(provider), nil, nil)
	if _, err := fresh.List(t.Context(), "session-1", 0); err != nil {
		t.Fatalf("List after rotation = %v", err)
	}
	if _, err := fresh.Load(t.Context(), "r1"); err != nil {
		t.Fatalf("Load after rotation = %v", err)
	}
	if _, err := fresh.List(t.Context(), "session-2", 0); err != nil {
		t.Fatalf("List of the other session after rotation = %v", err)
	}
	rec, ok, err := encrypt.KeysIn(fresh).Get(t.Context(), "session-1")
	if err != nil || !ok || rec.KEK != "kek-2" {
		t.Errorf("key record after rotation = %+v, %v, %v; want one wrapped by kek-2", rec, ok, err)
	}
}

func dump(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			t.Fatal(err)
		}
		b.Write(data)
		b.WriteByte('\n')
	}
	return b.String()
}

// TestSignedAndSealed signs checkpoints and seals them: they load with
// the verify key, and a verifier with another key refuses them.
func TestSignedAndSealed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	provider := encrypt.NewMemoryProvider("kek-1")
	sign := []state.MarshalOption{state.WithSigningKey("k1", []byte("signing key one"))}
	s := sealedSQLite(t, path, encrypt.NewKeyring(provider), sign,
		[]state.UnmarshalOption{state.WithVerifyKeys(map[string][]byte{"k1": []byte("signing key one")})})
	fill(t, s)
	if _, err := s.Load(t.Context(), "r1"); err != nil {
		t.Fatalf("Load signed and sealed = %v", err)
	}
	other := sealedSQLite(t, path, encrypt.NewKeyring(provider), nil,
		[]state.UnmarshalOption{state.WithVerifyKeys(map[string][]byte{"k1": []byte("another key")})})
	_, err := other.Load(t.Context(), "r1")
	var sig *state.SignatureError
	if !errors.As(err, &sig) {
		t.Fatalf("Load with another verify key = %v, want a *state.SignatureError", err)
	}
	// Without the keyring's codec the sealed checkpoint is refused, typed.
	bare, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	if _, err := bare.Load(t.Context(), "r1"); !errors.Is(err, state.ErrSealed) {
		t.Fatalf("Load without the codec = %v, want state.ErrSealed", err)
	}
}

// TestEveryKind seals and opens an item of every kind.
func TestEveryKind(t *testing.T) {
	hosted, err := state.HostedCall([]byte(`{"type":"web_search_call","id":"ws_1","status":"completed","action":{"query":"secret query"}}`))
	if err != nil {
		t.Fatal(err)
	}
	opaque, err := state.Opaque([]byte(`{"type":"future_item","payload":{"x":[1,"a\"b"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	mcpReq, err := state.ParseItem(state.KindMCPApprovalRequest, []byte(`{"type":"mcp_approval_request","id":"mr_1","server_label":"srv","name":"t","arguments":"{\"a\":1}"}`))
	if err != nil {
		t.Fatal(err)
	}
	items := []state.Item{
		state.UserMessage("hi"), state.SystemMessage("be brief"), state.AssistantMessage("", "hello"),
		state.Reasoning("rs_1", "think"), state.ToolCall("", "c1", "f", `{}`), state.ToolOutput("c1", "f", "out"),
		state.HandoffCall("fc_2", "c2", "transfer_to_b", `{}`), state.HandoffOutput("c2", "transfer_to_b", "ok"),
		hosted, opaque, mcpReq, state.MCPApprovalResponse("mr_1", "mcp:srv/t", false, "no reason"),
		state.CustomCall("", "c3", "sql", "select 1"), state.CustomOutput("c3", "sql", "1"),
	}
	for i := range items {
		items[i] = items[i].WithSeq(int64(i + 1))
	}
	kr := encrypt.NewKeyring(encrypt.NewMemoryProvider("kek-1"))
	s := sealedSQLite(t, filepath.Join(t.TempDir(), "s.db"), kr, nil, nil)
	if err := s.Append(t.Context(), "s", "r", items); err != nil {
		t.Fatalf("Append = %v", err)
	}
	if err := s.Append(t.Context(), "s", "r", items); err != nil {
		t.Fatalf("Append again (a retry) = %v", err)
	}
	got, err := s.List(t.Context(), "s", 0)
	if err != nil {
		t.Fatalf("List = %v", err)
	}
	for i := range items {
		if !got[i].Equal(items[i]) || got[i].Text() != items[i].Text() {
			raw, _ := json.Marshal(got[i].Raw())
			t.Errorf("item %d = %s %s, want %s", i, got[i], raw, items[i])
		}
	}
}

// readIfExists reads a file; a missing one is empty.
func readIfExists(name string) ([]byte, error) {
	data, err := os.ReadFile(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return data, err
}
