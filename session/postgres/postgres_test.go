package postgres_test

import (
	"errors"
	"testing"

	"github.com/turnkit/turnkit/session"
	"github.com/turnkit/turnkit/session/postgres"
	"github.com/turnkit/turnkit/state"
)

// TestOpenOwnsPool checks that a store made by Open closes its pool, and
// that it works across two stores on one schema (two workers).
func TestOpenOwnsPool(t *testing.T) {
	schema, _ := testSchema(t)
	url := serverURL(t)
	a, err := postgres.Open(t.Context(), url, postgres.WithSchema(schema))
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	b, err := postgres.Open(t.Context(), url, postgres.WithSchema(schema))
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
	if _, err := a.Load(t.Context(), "r"); !errors.Is(err, session.ErrClosed) {
		t.Fatalf("Load after Close = %v, want ErrClosed", err)
	}
}

func TestOpenBadURL(t *testing.T) {
	if s, err := postgres.Open(t.Context(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1"); err == nil {
		s.Close()
		t.Fatal("Open(unreachable server) = nil error")
	}
}

func TestSchemaVersion(t *testing.T) {
	schema, pool := testSchema(t)
	if _, err := postgres.New(t.Context(), pool, postgres.WithSchema(schema)); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(t.Context(), `INSERT INTO "`+schema+`".schema_version (version, name) VALUES (99, 'future')`); err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.New(t.Context(), pool, postgres.WithSchema(schema)); !errors.Is(err, postgres.ErrSchemaVersion) {
		t.Fatalf("New(newer schema) = %v, want ErrSchemaVersion", err)
	}
}
