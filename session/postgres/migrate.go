package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// A migration is one embedded schema file, NNNN_name.sql, applied once in
// version order and recorded in the schema_version table.
type migration struct {
	version int
	name    string
	sql     string
}

func migrations(schema string) ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	out := make([]migration, 0, len(names))
	for i, name := range names { // fs.Glob sorts
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v != i+1 {
			return nil, fmt.Errorf("postgres: migration %s: want a name starting %04d_", base, i+1)
		}
		b, err := migrationFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: base, sql: strings.ReplaceAll(string(b), "{{schema}}", schema)})
	}
	return out, nil
}

// migrate brings the schema up to the latest embedded version in one
// transaction under an advisory lock, so that workers starting at once
// apply each migration exactly once.
func migrate(ctx context.Context, pool *pgxpool.Pool, schemaName string) error {
	schema := pgx.Identifier{schemaName}.Sanitize()
	ms, err := migrations(schema)
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
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("postgres: migrate schema %s: %s: %w", schema, m.name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+schema+`.schema_version (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
				return fmt.Errorf("postgres: migrate schema %s: %s: %w", schema, m.name, err)
			}
		}
		return nil
	})
}
