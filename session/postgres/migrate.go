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

// Migrate brings the store's schema in the database up to the newest
// version this package embeds, creating the schema if it is missing, and
// returns. It is the explicit migration step for deployments that migrate
// apart from the workers (a release job, an init container), whose
// workers then open their stores [WithoutMigrations]. Of the options only
// [WithSchema] matters. [Open] and [New] run the same step by default.
//
// Migrate runs in one transaction under an advisory lock, so processes
// migrating at once apply each migration exactly once; running it on an
// up-to-date schema changes nothing. It fails with [ErrSchemaVersion]
// (in a [*SchemaError]) when a newer version of this package migrated the
// schema, and changes nothing then.
func Migrate(ctx context.Context, pool *pgxpool.Pool, opts ...Option) error {
	if pool == nil {
		panic("postgres: Migrate called with a nil pool")
	}
	return migrate(ctx, pool, newConfig(opts).schema)
}

func migrations(schema string) ([]rowcodec.Migration, error) {
	return rowcodec.Migrations(pkg, migrationFiles, func(s string) string { return strings.ReplaceAll(s, "{{schema}}", schema) })
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
			return &SchemaError{Schema: schemaName, Version: current, Want: len(ms)}
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

// checkSchema reads the schema's version without changing anything and
// fails with a *SchemaError unless it is the version this package
// embeds: what a store opened WithoutMigrations does instead of migrate.
func checkSchema(ctx context.Context, pool *pgxpool.Pool, schemaName string) error {
	schema := pgx.Identifier{schemaName}.Sanitize()
	ms, err := migrations(schema)
	if err != nil {
		return err
	}
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, schema+".schema_version").Scan(&exists); err != nil {
		return fmt.Errorf("postgres: check schema %s: %w", schema, err)
	}
	var current int
	if exists {
		if err := pool.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM `+schema+`.schema_version`).Scan(&current); err != nil {
			return fmt.Errorf("postgres: check schema %s: read version: %w", schema, err)
		}
	}
	if current != len(ms) {
		return &SchemaError{Schema: schemaName, Version: current, Want: len(ms)}
	}
	return nil
}
