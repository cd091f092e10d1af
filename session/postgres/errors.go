package postgres

import (
	"errors"
	"strconv"
)

// Errors of the store's schema; match them with errors.Is. A
// [*SchemaError] wraps one of them and says which schema and versions.
var (
	// ErrSchemaVersion means the database schema was migrated by a newer
	// version of this package: its schema_version is past the newest migration
	// this package embeds, so the store refuses to use it.
	ErrSchemaVersion = errors.New("postgres: database schema is newer than this package")
	// ErrNotMigrated means the database schema lacks migrations this
	// package needs (or the store's tables are missing altogether), and the
	// store was opened [WithoutMigrations]: run [Migrate] first.
	ErrNotMigrated = errors.New("postgres: database schema is not migrated")
)

// A SchemaError reports a schema whose version this package cannot use:
// Version is the version the database records (0 when it has none) and
// Want the newest migration this package embeds. It wraps
// [ErrSchemaVersion] when Version is past Want, else [ErrNotMigrated].
type SchemaError struct {
	Schema  string
	Version int
	Want    int
}

// Error gives the schema's version and the one this package needs, and what to do.
func (e *SchemaError) Error() string {
	s := "postgres: schema " + strconv.Quote(e.Schema) + " is at version " + strconv.Itoa(e.Version) +
		", this package needs " + strconv.Itoa(e.Want)
	if e.Version > e.Want {
		return s + ": it was migrated by a newer version of this package"
	}
	return s + ": run postgres.Migrate, or open the store without WithoutMigrations"
}

// Unwrap returns [ErrSchemaVersion] or [ErrNotMigrated].
func (e *SchemaError) Unwrap() error {
	if e.Version > e.Want {
		return ErrSchemaVersion
	}
	return ErrNotMigrated
}
