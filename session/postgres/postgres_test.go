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

// TestWithoutMigrations: a store opened WithoutMigrations changes nothing
// in the database and fails at once, with a typed error, on a schema that
// is missing, behind or newer; after the explicit Migrate step it opens
// and works, and Migrate run again changes nothing.
func TestWithoutMigrations(t *testing.T) {
	ctx := t.Context()
	schema, pool := testSchema(t)
	url := serverURL(t)
	notMigrated := func(what string, want, version int) {
		t.Helper()
		s, err := postgres.Open(ctx, url, postgres.WithSchema(schema), postgres.WithoutMigrations())
		if err == nil {
			s.Close()
			t.Fatalf("Open(%s, WithoutMigrations) = nil error", what)
		}
		se, ok := errors.AsType[*postgres.SchemaError](err)
		if !ok || se.Schema != schema || se.Version != version || se.Want != want {
			t.Fatalf("Open(%s, WithoutMigrations) = %v, want a *SchemaError at version %d of %d", what, err, version, want)
		}
	}

	// No schema at all: refused, and not created.
	notMigrated("no schema", 8, 0)
	if _, err := postgres.New(ctx, pool, postgres.WithSchema(schema), postgres.WithoutMigrations()); !errors.Is(err, postgres.ErrNotMigrated) {
		t.Fatalf("New(no schema, WithoutMigrations) = %v, want ErrNotMigrated", err)
	}
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists); err != nil || exists {
		t.Fatalf("schema exists = %v, %v; want it not created", exists, err)
	}

	// The explicit step, twice: the second applies nothing.
	for range 2 {
		if err := postgres.Migrate(ctx, pool, postgres.WithSchema(schema)); err != nil {
			t.Fatalf("Migrate = %v", err)
		}
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM "`+schema+`".schema_version`).Scan(&n); err != nil || n != 8 {
		t.Fatalf("schema_version rows = %d, %v; want 8", n, err)
	}
	s, err := postgres.Open(ctx, url, postgres.WithSchema(schema), postgres.WithoutMigrations())
	if err != nil {
		t.Fatalf("Open(migrated, WithoutMigrations) = %v", err)
	}
	if err := s.Append(ctx, "s", "r", []state.Item{state.UserMessage("hi").WithSeq(1)}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// A schema behind this package: refused, not migrated.
	if _, err := pool.Exec(ctx, `DELETE FROM "`+schema+`".schema_version WHERE version = 8`); err != nil {
		t.Fatal(err)
	}
	notMigrated("schema at 7", 8, 7)
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM "`+schema+`".schema_version`).Scan(&n); err != nil || n != 7 {
		t.Fatalf("schema_version rows = %d, %v; want 7 (untouched)", n, err)
	}

	// A newer schema: ErrSchemaVersion, with or without migrations.
	if _, err := pool.Exec(ctx, `INSERT INTO "`+schema+`".schema_version (version, name) VALUES (8, 'x'), (99, 'future')`); err != nil {
		t.Fatal(err)
	}
	_, err = postgres.New(ctx, pool, postgres.WithSchema(schema), postgres.WithoutMigrations())
	if !errors.Is(err, postgres.ErrSchemaVersion) || errors.Is(err, postgres.ErrNotMigrated) {
		t.Fatalf("New(newer schema, WithoutMigrations) = %v, want ErrSchemaVersion", err)
	}
	if err := postgres.Migrate(ctx, pool, postgres.WithSchema(schema)); !errors.Is(err, postgres.ErrSchemaVersion) {
		t.Fatalf("Migrate(newer schema) = %v, want ErrSchemaVersion", err)
	}
}
