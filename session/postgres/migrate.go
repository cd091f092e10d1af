package postgres

import (
	"context"
	"embed"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/turnkit/turnkit/session/internal/rowcodec"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrate brings the schema up to the latest embedded version in one
// transaction under an advisory lock, so that workers starting at once
// apply each migration exactly once.
func migrate(ctx context.Context, pool *pgxpool.Pool, schemaName string) error {
	schema := pgx.Identifier{schemaName}.Sanitize()
	ms, err := rowcodec.Migrations(pkg, migrationFiles, func(s string) string { return strings.ReplaceAll(s, "{{schema}}", schema) })
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('turnkit.session.migrate.' || $1, 0))`, schemaName); err != nil {
			return fmt.Errorf("postgres: migrate schema %s: lock: %w", schema, err)
		}
		if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+schema+`;
			CREATE TABLE IF NOT EXISTS `+schema+`.schema_version (
				version    integer     NOT NULL PRIMARY KEY,
				name       text        NOT NULL,
				applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("postgres: migrate schema %s: %w", schema, err)
		}
		var current int
		if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM `+schema+`.schema_version`).Scan(&current); err != nil {
			return fmt.Errorf("postgres: migrate schema %s: read version: %w", schema, err)
		}
		if current > len(ms) {
			return fmt.Errorf("postgres: schema %s version %d, this package knows %d: %w", schema, current, len(ms), ErrSchemaVersion)
		}
		for _, m := range ms[current:] {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("postgres: migrate schema %s: %s: %w", schema, m.Name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+schema+`.schema_version (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
				return fmt.Errorf("postgres: migrate schema %s: %s: %w", schema, m.Name, err)
			}
		}
		return nil
	})
}
