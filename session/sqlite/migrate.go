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

// migrate brings the database's schema up to the latest embedded version in
// one immediate transaction, so that processes opening the same file at
// once apply each migration exactly once. A database whose schema is newer
// than this package's fails with [ErrSchemaVersion].
func migrate(ctx context.Context, db *sql.DB) error {
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
		return fmt.Errorf("sqlite: database schema version %d, this package knows %d: %w", current, len(ms), ErrSchemaVersion)
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
