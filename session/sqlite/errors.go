package sqlite

import (
	"errors"
	"strconv"
)

// Errors of the database's schema; match them with errors.Is. A
// [*SchemaError] wraps one of them and says which versions.
var (
	// ErrSchemaVersion means the database file was migrated by a newer version
	// of this package: its schema_version is past the newest migration this
	// package embeds, so Open refuses to touch it.
	ErrSchemaVersion = errors.New("sqlite: database schema is newer than this package")
	// ErrNotMigrated means the database lacks migrations this package needs
	// (or has none of the store's tables), and the store was opened
	// [WithoutMigrations]: run [Migrate] first.
	ErrNotMigrated = errors.New("sqlite: database schema is not migrated")
)

// A SchemaError reports a database whose schema version this package
// cannot use: Path is the database file, Version is the version the file records (0 when it has
// none) and Want the newest migration this package embeds. It wraps
// [ErrSchemaVersion] when Version is past Want, else [ErrNotMigrated].
type SchemaError struct {
	Path    string
	Version int
	Want    int
}

// Error gives the database's schema version and the one this package needs, and what to do.
func (e *SchemaError) Error() string {
	s := "sqlite: database schema is at version " + strconv.Itoa(e.Version) +
		", this package needs " + strconv.Itoa(e.Want)
	if e.Version > e.Want {
		return s + ": it was migrated by a newer version of this package"
	}
	return s + ": run sqlite.Migrate, or open the store without WithoutMigrations"
}

// Unwrap returns [ErrSchemaVersion] or [ErrNotMigrated].
func (e *SchemaError) Unwrap() error {
	if e.Version > e.Want {
		return ErrSchemaVersion
	}
	return ErrNotMigrated
}
