package postgres

import "errors"

// ErrSchemaVersion means the database schema was migrated by a newer
// version of this package: its schema_version is past the newest migration
// this package embeds, so the store refuses to use it.
var ErrSchemaVersion = errors.New("postgres: database schema is newer than this package")
