package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"

	"github.com/turnkit/turnkit/session/internal/rowcodec"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrate brings the schema of the SQLite database at path (creating the
// file if needed) up to the newest version this package embeds, and
// closes the file again. It is the explicit migration step for
// deployments that migrate apart from the processes using the store,
// which then [Open] it [WithoutMigrations]. Of the options only
// [WithBusyTimeout] matters. Open runs the same step by default.
//
// Migrate runs in one immediate transaction, so processes migrating the
// same file at once apply each migration exactly once; running it on an
// up-to-date file changes nothing. It fails with [ErrSchemaVersion] (in a
// [*SchemaError]) when a newer version of this package migrated the file,
// and changes nothing then.
func Migrate(ctx context.Context, path string, opts ...Option) error {
	db, err := openDB(path, newConfig(opts))
	if err != nil {
		return err
	}
	if err := migrate(ctx, db, path); err != nil {
		db.Close()
		return fmt.Errorf("sqlite: migrate %q: %w", path, err)
	}
	if err := db.Close(); err != nil {
		return fmt.Errorf("sqlite: migrate %q: close: %w", path, err)
	}
	return nil
}

// migrate brings the database's schema up to the latest embedded version in
// one immediate transaction, so that processes opening the same file at
// once apply each migration exactly once. A database whose schema is newer
// than this package's fails with [ErrSchemaVersion].
func migrate(ctx context.Context, db *sql.DB, path string) error {
	ms, err := rowcodec.Migrations(pkg, migrationFiles, func(s string) string { return s })
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: see the DSN in Open
	if err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
		version    INTEGER NOT NULL PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
	)`); err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	var current int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&current); err != nil {
		return fmt.Errorf("sqlite: migrate: read schema version: %w", err)
	}
	if current > len(ms) {
		return &SchemaError{Path: path, Version: current, Want: len(ms)}
	}
	for _, m := range ms[current:] {
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return fmt.Errorf("sqlite: migrate %s: %w", m.Name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version, name) VALUES (?, ?)`, m.Version, m.Name); err != nil {
			return fmt.Errorf("sqlite: migrate %s: %w", m.Name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: migrate: commit: %w", err)
	}
	return nil
}

// checkSchema reads the database's schema version without writing and
// fails with a *SchemaError unless it is the version this package
// embeds: what Open WithoutMigrations does instead of migrate.
func checkSchema(ctx context.Context, db *sql.DB, path string) error {
	ms, err := rowcodec.Migrations(pkg, migrationFiles, func(s string) string { return s })
	if err != nil {
		return err
	}
	var tables, current int
	err = db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'`).Scan(&tables)
	if err == nil && tables == 1 {
		err = db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&current)
	}
	if err != nil {
		return fmt.Errorf("sqlite: check schema: read version: %w", err)
	}
	if current != len(ms) {
		return &SchemaError{Path: path, Version: current, Want: len(ms)}
	}
	return nil
}
