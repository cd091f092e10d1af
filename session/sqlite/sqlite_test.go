package sqlite_test

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/turnkit/turnkit/session/sqlite"
	"github.com/turnkit/turnkit/state"
)

func TestReopenKeepsSessions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []state.Item{state.UserMessage("hello").WithSeq(1), state.AssistantMessage("m", "hi").WithSeq(2)}
	if err := s.Append(t.Context(), "chat", "run1", want[1:]); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(t.Context(), "chat", "run1", want[:1]); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := open(t, path).List(t.Context(), "chat", 0)
	if err != nil || len(got) != 2 || !got[0].Equal(want[0]) || !got[1].Equal(want[1]) {
		t.Fatalf("List after reopen = %v, %v; want %v", got, err, want)
	}
}

func TestSchemaVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	open(t, path)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var version int
	var mode string
	if err := db.QueryRow(`SELECT MAX(version) FROM schema_version`).Scan(&version); err != nil || version != 13 {
		t.Fatalf("schema_version = %d, %v; want 13", version, err)
	}
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v; want wal", mode, err)
	}
	// A second Open applies nothing again.
	open(t, path)
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM schema_version`).Scan(&n); err != nil || n != 13 {
		t.Fatalf("schema_version rows = %d, %v; want 13", n, err)
	}
	// A file from a newer package is refused, not touched.
	if _, err := db.Exec(`INSERT INTO schema_version (version, name) VALUES (99, '0099_future.sql')`); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.Open(path); !errors.Is(err, sqlite.ErrSchemaVersion) {
		t.Fatalf("Open(newer schema) = %v, want ErrSchemaVersion", err)
	}
}

func TestOpenBadPath(t *testing.T) {
	for _, path := range []string{"", "a?b.db", filepath.Join(t.TempDir(), "missing", "dir", "s.db")} {
		if s, err := sqlite.Open(path); err == nil {
			s.Close()
			t.Errorf("Open(%q) = nil error, want an error", path)
		}
	}
}

// TestCrossProcess has several processes append to one file at once, each
// its own runs and one run they all share; every item lands once, in order.
func TestCrossProcess(t *testing.T) {
	if os.Getenv("TURNKIT_SQLITE_CHILD") != "" {
		t.Skip("in a child process")
	}
	const procs, perProc = 3, 30
	path := filepath.Join(t.TempDir(), "shared.db")
	open(t, path) // migrate once up front, as a deployment would
	cmds := make([]*exec.Cmd, procs)
	for i := range cmds {
		cmds[i] = exec.Command(os.Args[0], "-test.run=^TestCrossProcessChild$", "-test.count=1")
		cmds[i].Env = append(os.Environ(), "TURNKIT_SQLITE_CHILD="+path, "TURNKIT_SQLITE_CHILD_ID="+strconv.Itoa(i))
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
	}
	got, err := open(t, path).List(t.Context(), "shared", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != procs*perProc+perProc {
		t.Fatalf("List = %d items, want %d", len(got), procs*perProc+perProc)
	}
	runs := map[string]bool{}
	for i := 0; i < len(got); i += perProc {
		run := got[i].Text()[:len(got[i].Text())-len("#1")]
		if runs[run] {
			t.Fatalf("run %s appears twice", run)
		}
		runs[run] = true
		for j := range perProc {
			want := fmt.Sprintf("%s#%d", run, j+1)
			if it := got[i+j]; it.Text() != want || it.Seq() != int64(j+1) {
				t.Fatalf("item %d = %v %q, want seq %d %q", i+j, it, it.Text(), j+1, want)
			}
		}
	}
}

func TestCrossProcessChild(t *testing.T) {
	path, id := os.Getenv("TURNKIT_SQLITE_CHILD"), os.Getenv("TURNKIT_SQLITE_CHILD_ID")
	if path == "" {
		t.Skip("run by TestCrossProcess")
	}
	s := open(t, path)
	own := "proc" + id
	for seq := int64(1); seq <= 30; seq++ {
		for _, run := range []string{own, "common"} {
			it := state.UserMessage(fmt.Sprintf("%s#%d", run, seq)).WithSeq(seq)
			if err := s.Append(t.Context(), "shared", run, []state.Item{it}); err != nil {
				t.Fatalf("Append(%s, %d) = %v", run, seq, err)
			}
		}
	}
}

// TestWithoutMigrations: Open WithoutMigrations writes nothing and fails
// at once, with a typed error, on a file that is new, behind or newer;
// after the explicit Migrate step it opens and works, and Migrate run
// again changes nothing.
func TestWithoutMigrations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	notMigrated := func(what string, version int) {
		t.Helper()
		s, err := sqlite.Open(path, sqlite.WithoutMigrations())
		if err == nil {
			s.Close()
			t.Fatalf("Open(%s, WithoutMigrations) = nil error", what)
		}
		se, ok := errors.AsType[*sqlite.SchemaError](err)
		if !ok || !errors.Is(err, sqlite.ErrNotMigrated) || se.Path != path || se.Version != version || se.Want != 13 {
			t.Fatalf("Open(%s, WithoutMigrations) = %v, want a *SchemaError (ErrNotMigrated) at version %d of 13", what, err, version)
		}
	}
	tables := func() int {
		t.Helper()
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	notMigrated("a new file", 0)
	if n := tables(); n != 0 {
		t.Fatalf("a refused Open left %d tables, want none", n)
	}
	for range 2 {
		if err := sqlite.Migrate(t.Context(), path); err != nil {
			t.Fatalf("Migrate = %v", err)
		}
	}
	s, err := sqlite.Open(path, sqlite.WithoutMigrations())
	if err != nil {
		t.Fatalf("Open(migrated, WithoutMigrations) = %v", err)
	}
	if err := s.Append(t.Context(), "s", "r", []state.Item{state.UserMessage("hi").WithSeq(1)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM schema_version`).Scan(&n); err != nil || n != 13 {
		t.Fatalf("schema_version rows = %d, %v; want 13 (Migrate twice applies each once)", n, err)
	}
	if _, err := db.Exec(`DELETE FROM schema_version WHERE version = 13`); err != nil {
		t.Fatal(err)
	}
	notMigrated("a file at version 12", 12)
	if err := db.QueryRow(`SELECT count(*) FROM schema_version`).Scan(&n); err != nil || n != 12 {
		t.Fatalf("schema_version rows = %d, %v; want 12 (untouched)", n, err)
	}
	if _, err := db.Exec(`INSERT INTO schema_version (version, name) VALUES (13, 'x'), (99, 'future')`); err != nil {
		t.Fatal(err)
	}
	_, err = sqlite.Open(path, sqlite.WithoutMigrations())
	if !errors.Is(err, sqlite.ErrSchemaVersion) || errors.Is(err, sqlite.ErrNotMigrated) {
		t.Fatalf("Open(newer, WithoutMigrations) = %v, want ErrSchemaVersion", err)
	}
	if err := sqlite.Migrate(t.Context(), path); !errors.Is(err, sqlite.ErrSchemaVersion) {
		t.Fatalf("Migrate(newer) = %v, want ErrSchemaVersion", err)
	}
}
